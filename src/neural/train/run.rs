//! What a training run needs whatever it trains (HAtten's encoder and the
//! reranker alike): its files in the output directory, the state saved after
//! each validation so that a run resumes, the optimiser, the time limit, and
//! keeping the last and the best weights.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, ModuleOptimizer};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util::write_atomic;

/// What both trainers report while they run (the CLI draws bars); each
/// trainer's own trait adds its checkpoints.
pub trait RunProgress {
    /// A phase with `len` units starts (`len` 0: unknown).
    fn phase(&self, name: &str, len: u64);
    /// `n` units done; `loss` when training.
    fn advance(&self, n: u64, loss: Option<f32>);
}

/// The files a training run writes in its output directory (only the
/// config file's name differs between the trainers).
pub struct RunFiles {
    pub dir: PathBuf,
    config_name: &'static str,
}

impl RunFiles {
    pub fn new(dir: &Path, config_name: &'static str) -> RunFiles {
        RunFiles { dir: dir.to_path_buf(), config_name }
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join(self.config_name)
    }
    /// Weights of the best validation.
    pub fn best(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }
    /// Weights at the last validation (to resume).
    pub fn last(&self) -> PathBuf {
        self.dir.join("last.safetensors")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.join("train-state.json")
    }

    /// The state a run saved, or a fresh one when there is none yet.
    pub fn read_state<S: DeserializeOwned + Default>(&self) -> Result<S> {
        match std::fs::read_to_string(self.state()) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| Error::Parse { path: self.state(), line: e.line(), reason: e.to_string() }),
            Err(_) => Ok(S::default()),
        }
    }

    /// The state a run in `dir` saved, when there is one (what `doctor`
    /// reports of a library's runs).
    pub fn saved<S: DeserializeOwned + Default>(dir: &Path) -> Result<Option<S>> {
        let files = RunFiles::new(dir, "config.json");
        if !files.state().exists() {
            return Ok(None);
        }
        files.read_state().map(Some)
    }

    pub fn write_state<S: Serialize>(&self, state: &S) -> Result<()> {
        write_atomic(&self.state(), serde_json::to_string_pretty(state).expect("state serializes").as_bytes())
    }
}

/// How far a run got: the units (epochs, steps) finished and the best
/// validation score. Each trainer has its own type, whose field names are
/// those of its state file.
pub trait Counters: Default + Serialize + DeserializeOwned {
    /// Units finished.
    fn done(&self) -> usize;
    /// The best validation score so far.
    fn best_score(&mut self) -> &mut f64;
}

/// A run's `train-state.json`: the counters, one history entry per
/// validation, and the options of the latest start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState<C, E, O> {
    #[serde(flatten)]
    pub counters: C,
    pub history: Vec<E>,
    pub options: Option<O>,
}

impl<C: Default, E, O> Default for RunState<C, E, O> {
    fn default() -> Self {
        RunState { counters: C::default(), history: Vec::new(), options: None }
    }
}

/// Adam with the gradients clipped to a norm of 1, the optimiser of both
/// trainers. Its moments start afresh when a run resumes.
pub fn clipped_adam() -> ModuleOptimizer {
    AdamConfig::new().with_grad_clipping(Some(GradientClippingConfig::Norm(1.0))).init()
}

/// A time limit counted from its start.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    max_minutes: Option<f64>,
}

impl Deadline {
    /// From now; no limit when `max_minutes` is `None`.
    pub fn start(max_minutes: Option<f64>) -> Deadline {
        Deadline { started: Instant::now(), max_minutes }
    }

    pub fn passed(&self) -> bool {
        self.max_minutes.is_some_and(|m| self.started.elapsed().as_secs_f64() > m * 60.0)
    }
}

/// One training run in its output directory: files, saved state, deadline.
pub struct TrainingRun<C, E, O> {
    pub files: RunFiles,
    pub state: RunState<C, E, O>,
    pub deadline: Deadline,
}

impl<C: Counters, E: Serialize + DeserializeOwned, O: Serialize + DeserializeOwned> TrainingRun<C, E, O> {
    /// Creates the directory, starts the clock and reads the saved state.
    pub fn open(dir: &Path, config_name: &'static str, max_minutes: Option<f64>) -> Result<Self> {
        let files = RunFiles::new(dir, config_name);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let deadline = Deadline::start(max_minutes);
        let state = files.read_state()?;
        Ok(TrainingRun { files, state, deadline })
    }

    /// Whether the run goes on from its last saved weights: some units are
    /// finished and [`RunFiles::last`] exists. When not, the state starts
    /// afresh (a state without weights is not resumed).
    pub fn resuming(&mut self) -> bool {
        let resume = self.state.counters.done() > 0 && self.files.last().exists();
        if !resume {
            self.state = RunState::default();
        }
        resume
    }

    /// Records this start's options and writes the model's config file.
    pub fn begin(&mut self, options: O, config: &str) -> Result<()> {
        self.state.options = Some(options);
        write_atomic(&self.files.config(), config.as_bytes())
    }

    pub fn out_of_time(&self) -> bool {
        self.deadline.passed()
    }

    /// Keeps the weights of a validation that scored `score`: `save` writes
    /// them to [`RunFiles::last`], and to [`RunFiles::best`] as well when the
    /// score beats every earlier one (or is the first). Whether it did.
    pub fn keep(&mut self, score: f64, save: impl Fn(&Path) -> Result<()>) -> Result<bool> {
        let best = score > *self.state.counters.best_score() || self.state.history.is_empty();
        save(&self.files.last())?;
        if best {
            *self.state.counters.best_score() = score;
            save(&self.files.best())?;
        }
        Ok(best)
    }

    /// Appends a validation's entry to the history and writes the state.
    pub fn record(&mut self, entry: E) -> Result<()> {
        self.state.history.push(entry);
        self.files.write_state(&self.state)
    }

    /// The history, ending the run.
    pub fn into_history(self) -> Vec<E> {
        self.state.history
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Steps {
        steps_done: usize,
        #[serde(alias = "best_r10")]
        best: f64,
    }

    impl Counters for Steps {
        fn done(&self) -> usize {
            self.steps_done
        }
        fn best_score(&mut self) -> &mut f64 {
            &mut self.best
        }
    }

    type Run = TrainingRun<Steps, f64, String>;

    /// `save` as a trainer passes it: writes `tag` to the path.
    fn saver(tag: &str) -> impl Fn(&Path) -> Result<()> + '_ {
        move |p: &Path| std::fs::write(p, tag).map_err(|e| Error::io(p, e))
    }

    fn read(p: PathBuf) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn the_state_file_keeps_the_counters_names_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path(), "model.json");
        let fresh: RunState<Steps, f64, String> = files.read_state().unwrap();
        assert_eq!((fresh.counters, fresh.history.len(), fresh.options), (Steps::default(), 0, None));

        let state =
            RunState { counters: Steps { steps_done: 40, best: 0.75 }, history: vec![0.5, 0.75], options: Some("lr 1e-4".to_string()) };
        files.write_state(&state).unwrap();
        let json: serde_json::Value = serde_json::from_str(&read(files.state())).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["best", "history", "options", "steps_done"], "the counters' fields sit at the top level");
        let back: RunState<Steps, f64, String> = files.read_state().unwrap();
        assert_eq!(back.counters, state.counters);
        assert_eq!((back.history, back.options), (state.history, state.options));

        // A file from before a rename still reads, through the alias.
        std::fs::write(files.state(), r#"{"steps_done": 3, "best_r10": 0.25, "history": [], "options": null}"#).unwrap();
        let old: RunState<Steps, f64, String> = files.read_state().unwrap();
        assert_eq!(old.counters, Steps { steps_done: 3, best: 0.25 });

        std::fs::write(files.state(), "{\n  \"steps_done\": ").unwrap();
        let err = files.read_state::<RunState<Steps, f64, String>>().expect_err("a cut file").to_string();
        assert!(err.contains("train-state.json"), "{err}");
    }

    #[test]
    fn the_last_weights_always_and_the_best_only_when_they_beat_every_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = Run::open(&dir.path().join("out"), "model.json", None).unwrap();
        assert!(!run.resuming());
        run.begin("first".into(), "{\"width\": 8}").unwrap();
        assert_eq!(read(run.files.config()), "{\"width\": 8}");

        // The first validation is the best even with a score of 0.
        assert!(run.keep(0.0, saver("one")).unwrap());
        run.record(0.0).unwrap();
        assert!(run.keep(0.6, saver("two")).unwrap());
        run.record(0.6).unwrap();
        assert_eq!((read(run.files.last()), read(run.files.best())), ("two".into(), "two".into()));
        // Worse, then equal: the last weights move, the best stay.
        assert!(!run.keep(0.4, saver("three")).unwrap());
        run.record(0.4).unwrap();
        assert!(!run.keep(0.6, saver("four")).unwrap());
        assert_eq!((read(run.files.last()), read(run.files.best())), ("four".into(), "two".into()));
        assert_eq!(run.state.counters.best, 0.6);
    }

    #[test]
    fn a_run_resumes_from_its_saved_state_and_last_weights() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = Run::open(dir.path(), "model.json", None).unwrap();
        assert!(!run.resuming());
        run.begin("first".into(), "{}").unwrap();
        run.state.counters.steps_done = 20;
        run.keep(0.5, saver("w20")).unwrap();
        run.record(0.5).unwrap();

        let mut again = Run::open(dir.path(), "model.json", None).unwrap();
        assert!(again.resuming());
        assert_eq!((again.state.counters.done(), again.state.counters.best), (20, 0.5));
        assert_eq!(again.state.options.as_deref(), Some("first"));
        again.begin("second".into(), "{}").unwrap();
        again.state.counters.steps_done = 40;
        assert!(!again.keep(0.3, saver("w40")).unwrap(), "0.5 was reached before the restart");
        again.record(0.3).unwrap();
        assert_eq!(again.into_history(), [0.5, 0.3]);
        let saved: RunState<Steps, f64, String> = RunFiles::new(dir.path(), "model.json").read_state().unwrap();
        assert_eq!((saved.counters.steps_done, saved.options.as_deref()), (40, Some("second")));

        // Without the last weights the saved state is dropped: a fresh run.
        std::fs::remove_file(dir.path().join("last.safetensors")).unwrap();
        let mut fresh = Run::open(dir.path(), "model.json", None).unwrap();
        assert!(!fresh.resuming());
        assert_eq!((fresh.state.counters, fresh.state.history.len(), fresh.state.options), (Steps::default(), 0, None));
    }

    #[test]
    fn the_deadline_passes_only_with_a_limit_once_it_is_over() {
        assert!(!Deadline::start(None).passed());
        assert!(!Deadline::start(Some(60.0)).passed());
        let over = Deadline::start(Some(0.0));
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(over.passed());
        // A run's deadline counts from its opening.
        let dir = tempfile::tempdir().unwrap();
        assert!(!Run::open(dir.path(), "model.json", Some(1.0)).unwrap().out_of_time());
        let run = Run::open(dir.path(), "model.json", Some(0.0)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(run.out_of_time());
    }
}
