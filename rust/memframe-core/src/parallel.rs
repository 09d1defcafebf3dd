//! Batch work on a rayon pool of a chosen size (pools are built once per size and reused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

fn pools() -> &'static Mutex<HashMap<usize, Arc<ThreadPool>>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Number of threads used when the caller does not choose (all cores).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn resolve(threads: Option<usize>) -> usize {
    match threads {
        Some(n) if n > 0 => n,
        _ => default_threads(),
    }
}

/// Run `work` inside a pool of `threads` threads (`None` or 0: all cores).
fn with_threads<R: Send>(threads: Option<usize>, work: impl FnOnce() -> R + Send) -> R {
    let threads = resolve(threads);
    let pool = {
        let mut pools = pools()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pools
            .entry(threads)
            .or_insert_with(|| {
                Arc::new(
                    ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .thread_name(move |i| format!("memframe-{threads}-{i}"))
                        .build()
                        .expect("could not start memframe worker threads"),
                )
            })
            .clone()
    };
    pool.install(work)
}

/// `f` over every item, in order, on `threads` threads; each task takes at least `min_len`
/// items. One thread (or one item) runs on the calling thread: handing the batch to a pool
/// worker costs more than it saves (measured: a one-thread scan batch ran ~20% slower).
pub fn map_items<T: Sync, R: Send>(
    threads: Option<usize>,
    items: &[T],
    min_len: usize,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    if resolve(threads) == 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    with_threads(threads, || {
        items.par_iter().with_min_len(min_len).map(f).collect()
    })
}
