//! The step loop that adaptation and distillation share: the starting
//! weights are validated once (so they are the first "best"), then each
//! step trains on the batch the caller's loss draws for it, and every
//! `eval_every` steps, at the last step and when the sitting's time is up,
//! the weights are validated and kept (last, and best when they beat every
//! earlier checkpoint) through [`TrainingRun`], which resumes from there.

use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::super::hatten::Hatten;
use super::run::{clipped_adam, Counters, RunProgress, TrainingRun};
use crate::error::Result;

/// A validation's record.
pub trait Checkpoint {
    /// What the best checkpoint is chosen by (higher is better).
    fn score(&self) -> f64;
    fn set_best(&mut self, best: bool);
}

/// Steps done and the best score so far.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct StepCounters {
    pub steps_done: usize,
    pub best_score: f64,
}

impl Counters for StepCounters {
    fn done(&self) -> usize {
        self.steps_done
    }
    fn best_score(&mut self) -> &mut f64 {
        &mut self.best_score
    }
}

/// How far to train and how often to validate.
pub struct StepPlan {
    pub max_steps: usize,
    pub eval_every: usize,
    pub learning_rate: f64,
    /// The progress phase's name while training.
    pub phase: &'static str,
}

/// The model a run trains: its last weights when it resumes, else
/// `start` (none: freshly initialised); `seed` seeds the device's generator
/// (initialisation, dropout), so that a run repeats.
pub fn starting_model<C, E, O>(
    run: &mut TrainingRun<C, E, O>,
    config: &crate::neural::hatten::HattenConfig,
    start: Option<&[u8]>,
    seed: u64,
    device: &burn::tensor::Device,
) -> Result<Hatten>
where
    C: Counters,
    E: Serialize + DeserializeOwned,
    O: Serialize + DeserializeOwned,
{
    // The fresh initialisation and dropout draw from the device's generator:
    // seeded, a run is repeatable.
    device.seed(seed);
    if run.resuming() {
        return Hatten::load(config, &run.files.last(), device);
    }
    match start {
        Some(bytes) => Hatten::load_bytes(config, bytes.to_vec(), "the starting weights", device),
        None => Ok(config.init(device)),
    }
}

/// Runs the loop on `model` (on an autodiff device): `loss_at(model, step)`
/// is a step's loss, `validate(weights, step, mean loss since the last
/// checkpoint, when that span started)` a checkpoint's record, `report` is
/// told each record. Returns the run's history.
#[allow(clippy::too_many_arguments)]
pub fn run_steps<E, O>(
    mut run: TrainingRun<StepCounters, E, O>,
    mut model: Hatten,
    plan: &StepPlan,
    loss_at: &dyn Fn(&Hatten, usize) -> Tensor<1>,
    validate: &dyn Fn(&Hatten, usize, f32, Instant) -> E,
    progress: &dyn RunProgress,
    report: &dyn Fn(&E),
) -> Result<Vec<E>>
where
    E: Checkpoint + Serialize + DeserializeOwned,
    O: Serialize + DeserializeOwned,
{
    let checkpoint = |run: &mut TrainingRun<StepCounters, E, O>, weights: Hatten, step: usize, loss: f32, t0: Instant| -> Result<()> {
        let mut c = validate(&weights, step, loss, t0);
        c.set_best(run.keep(c.score(), |p| weights.save(p))?);
        report(&c);
        run.state.counters.steps_done = step;
        run.record(c)
    };
    if run.state.history.is_empty() {
        checkpoint(&mut run, model.valid(), 0, 0.0, Instant::now())?;
    }
    let mut optim = clipped_adam();
    let mut step = run.state.counters.steps_done;
    let (mut loss_sum, mut since) = (0f32, 0usize);
    let mut t0 = Instant::now();
    progress.phase(plan.phase, plan.max_steps.saturating_sub(step) as u64);
    while step < plan.max_steps {
        let loss = loss_at(&model, step);
        let value = loss.clone().into_scalar::<f32>();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(plan.learning_rate, model, grads);
        step += 1;
        loss_sum += value;
        since += 1;
        progress.advance(1, Some(loss_sum / since as f32));
        let out_of_time = run.out_of_time();
        if step.is_multiple_of(plan.eval_every.max(1)) || step == plan.max_steps || out_of_time {
            checkpoint(&mut run, model.valid(), step, loss_sum / since as f32, t0)?;
            (loss_sum, since) = (0.0, 0);
            t0 = Instant::now();
            // The time may have run out during the validation: stop at this
            // checkpoint rather than take one more step for another.
            if out_of_time || run.out_of_time() {
                break;
            }
            progress.phase(plan.phase, plan.max_steps.saturating_sub(step) as u64);
        }
    }
    Ok(run.into_history())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neural::hatten::HattenConfig;

    /// A fresh model's word projection, from `seed` (no other unit test
    /// draws from the backend's generator meanwhile).
    fn fresh_weights(seed: u64) -> Vec<f32> {
        let dir = tempfile::tempdir().unwrap();
        let mut run = TrainingRun::<StepCounters, (), ()>::open(dir.path(), "config.json", None).unwrap();
        let config = HattenConfig::new().with_word_dim(8).with_d_model(8).with_heads(2).with_d_ff(16);
        let model = starting_model(&mut run, &config, None, seed, &burn::tensor::Device::flex()).unwrap();
        model.word_proj.weight.val().into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn a_fresh_run_starts_from_the_same_weights_for_the_same_seed() {
        let (a, b, c) = (fresh_weights(3), fresh_weights(3), fresh_weights(4));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
