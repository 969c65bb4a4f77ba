//! The CPU's threads for model work: how many there are (the `threads`
//! setting) and a batch dealt over them.
//!
//! The CPU backend's kernels and matrix products run on the rayon pool they
//! are called from (burn-flex and `gemm` ask rayon for its threads), so the
//! threads that compute are one rayon pool: the global one, sized once at
//! start by [`use_threads`] (a pool of its own where a caller installs one,
//! as the background encoding does). [`in_parts`] deals a batch of pairs or
//! texts over that pool's threads, one part each; a part's own matrix
//! products then find every other thread busy and run on its thread, so
//! nothing oversubscribes and no thread waits on another's small product.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// The environment variable that sets the threads for model work (it wins
/// over the config's `threads`).
pub const THREADS_ENV: &str = "CITEWISE_THREADS";

/// Threads per core that model work may be given at most (`threads`,
/// [`THREADS_ENV`]); more only wait for a core, and each costs a stack.
const THREADS_PER_CORE: usize = 4;

/// Threads for model work at most, however many are asked for: four per
/// core, at least 4 and at most 256 (a pool of 100,000 threads takes
/// minutes to start and gigabytes of stacks, and computes no faster).
pub const MAX_THREADS: usize = 256;

/// The most threads model work gets on a machine of `cores` cores.
pub fn max_threads(cores: usize) -> usize {
    cores.saturating_mul(THREADS_PER_CORE).clamp(4, MAX_THREADS)
}

/// Threads for model work: [`THREADS_ENV`], else `setting` (the config's
/// `threads`), else one per core less `reserve` (the editor and the
/// language server keep a core for their own loop), but both of two cores,
/// and at least one; never more than [`max_threads`].
pub fn compute_threads(setting: Option<usize>, reserve: usize) -> Result<usize> {
    resolve_threads(std::env::var(THREADS_ENV).ok().as_deref(), setting, reserve, cores()).map_err(Error::Config)
}

/// Sizes the global pool to [`compute_threads`]; returns its size.
pub fn use_compute_threads(setting: Option<usize>, reserve: usize) -> Result<usize> {
    Ok(use_threads(compute_threads(setting, reserve)?))
}

/// [`compute_threads`] with the environment's value `env` and `cores`.
fn resolve_threads(env: Option<&str>, setting: Option<usize>, reserve: usize, cores: usize) -> std::result::Result<usize, String> {
    let asked = match env.map(|v| (v, v.trim().parse::<usize>())) {
        Some((_, Ok(n))) if n > 0 => n,
        // A number too large to read is a number of threads too: the most.
        Some((_, Err(e))) if *e.kind() == std::num::IntErrorKind::PosOverflow => usize::MAX,
        Some((v, _)) => return Err(format!("{THREADS_ENV}={v}: not a number of threads (a whole number from 1)")),
        // Two cores are both kept busy: one thread would halve the answer's speed.
        None => setting.unwrap_or_else(|| cores.saturating_sub(reserve).max(cores.min(2))),
    };
    Ok(asked.clamp(1, max_threads(cores)))
}

pub use crate::util::cores;

/// Sizes the global pool, where model work runs, to `threads`. Only the
/// first call of a process takes effect (the pool is built once); returns
/// the pool's size.
pub fn use_threads(threads: usize) -> usize {
    let threads = threads.clamp(1, max_threads(cores()));
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("citewise-compute-{i}")).build_global();
    rayon::current_num_threads()
}

/// The threads model work called from here runs on (those of the pool it
/// is in, else the global pool's).
pub fn threads_here() -> usize {
    rayon::current_num_threads()
}

/// `f` over parts of `order` (every item's index, sorted by the item's
/// length), one part for each thread of the current pool, the items dealt
/// to the parts in turn so that every part holds short and long ones
/// alike; `f(part)` returns one output per index of `part`. The outputs,
/// in the items' order. One part (a single thread, or one item) runs `f`
/// on this thread.
pub fn in_parts<R: Send>(order: &[usize], f: impl Fn(&[usize]) -> Vec<R> + Sync) -> Vec<R> {
    let parts = threads_here().min(order.len()).max(1);
    if parts == 1 {
        return in_one_part(order, f);
    }
    let dealt: Vec<Vec<usize>> = (0..parts).map(|p| order.iter().skip(p).step_by(parts).copied().collect()).collect();
    let done: Vec<(Vec<usize>, Vec<R>)> = dealt
        .into_par_iter()
        .map(|part| {
            let out = f(&part);
            (part, out)
        })
        .collect();
    scatter(order.len(), done)
}

/// `f` over `order` as one part on this thread (a GPU's batches are one
/// stream), the outputs in the items' order.
pub fn in_one_part<R>(order: &[usize], f: impl Fn(&[usize]) -> Vec<R>) -> Vec<R> {
    scatter(order.len(), [(order.to_vec(), f(order))])
}

/// The outputs of each part placed at their items' indices.
fn scatter<R>(n: usize, parts: impl IntoIterator<Item = (Vec<usize>, Vec<R>)>) -> Vec<R> {
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(n).collect();
    for (part, outputs) in parts {
        assert_eq!(part.len(), outputs.len(), "one output per item of a part");
        for (i, r) in part.into_iter().zip(outputs) {
            out[i] = Some(r);
        }
    }
    out.into_iter().map(|r| r.expect("every item in one part")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn every_item_is_scored_once_and_answers_in_its_own_place() {
        let order = [4, 0, 3, 1, 2, 5, 6];
        for threads in [1, 2, 3, 8] {
            let calls = std::sync::atomic::AtomicUsize::new(0);
            let out = pool(threads).install(|| {
                in_parts(&order, |part| {
                    calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    part.iter().map(|&i| i * 10).collect()
                })
            });
            assert_eq!(out, [0, 10, 20, 30, 40, 50, 60], "{threads} threads");
            assert_eq!(calls.into_inner(), threads.min(order.len()), "one part per thread");
        }
    }

    #[test]
    fn each_part_holds_short_and_long_items_alike() {
        // Items sorted by length: dealt in turn, 2 parts get 0, 2, 4 and 1, 3, 5.
        let order = [0, 1, 2, 3, 4, 5];
        let parts = std::sync::Mutex::new(Vec::new());
        pool(2).install(|| {
            in_parts(&order, |part| {
                parts.lock().unwrap().push(part.to_vec());
                vec![(); part.len()]
            })
        });
        let mut parts = parts.into_inner().unwrap();
        parts.sort();
        assert_eq!(parts, [vec![0, 2, 4], vec![1, 3, 5]]);
    }

    #[test]
    fn the_environment_wins_over_the_setting_which_wins_over_the_cores() {
        assert_eq!(resolve_threads(Some("6"), Some(3), 1, 16), Ok(6));
        assert_eq!(resolve_threads(None, Some(3), 1, 16), Ok(3));
        assert_eq!(resolve_threads(None, Some(0), 0, 16), Ok(1));
        assert_eq!(resolve_threads(None, None, 0, 16), Ok(16));
        assert_eq!(resolve_threads(None, None, 1, 16), Ok(15), "the editor keeps a core");
        assert_eq!(resolve_threads(None, None, 1, 2), Ok(2), "two cores both compute");
        assert_eq!(resolve_threads(None, None, 1, 1), Ok(1));
        for bad in ["0", "many", "-2", ""] {
            let e = resolve_threads(Some(bad), Some(3), 0, 16).unwrap_err();
            assert!(e.contains(THREADS_ENV) && e.contains("not a number of threads"), "{e}");
        }
    }

    #[test]
    fn a_count_past_four_per_core_is_clamped() {
        // `threads = 100000` in config.toml: a pool that would take minutes to start.
        assert_eq!(resolve_threads(None, Some(100_000), 1, 2), Ok(8));
        assert_eq!(resolve_threads(None, Some(100_000), 1, 16), Ok(64));
        assert_eq!(resolve_threads(None, Some(100_000), 1, 1000), Ok(MAX_THREADS), "never more than 256");
        assert_eq!(resolve_threads(Some("100000"), None, 0, 2), Ok(8));
        assert_eq!(resolve_threads(Some("99999999999999999999999"), None, 0, 2), Ok(8), "past usize: the most");
        assert_eq!(resolve_threads(None, Some(usize::MAX), 0, usize::MAX), Ok(MAX_THREADS));
        // Up to four per core is taken as asked (3 on two cores, as CI asks).
        assert_eq!(resolve_threads(Some("3"), None, 0, 2), Ok(3));
        assert_eq!(resolve_threads(None, Some(8), 0, 2), Ok(8));
        assert_eq!(resolve_threads(None, Some(4), 0, 1), Ok(4), "at least four on one core");
        assert_eq!(max_threads(0), 4);
    }
}
