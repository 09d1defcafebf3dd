//! Batch work on a rayon pool of a chosen size (pools are built once per size and reused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

fn pools() -> &'static Mutex<HashMap<usize, Arc<ThreadPool>>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Number of threads used when the caller does not choose (all cores).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Run `work` inside a pool of `threads` threads (`None` or 0: all cores).
pub fn with_threads<R: Send>(threads: Option<usize>, work: impl FnOnce() -> R + Send) -> R {
    let threads = match threads {
        Some(n) if n > 0 => n,
        _ => default_threads(),
    };
    let pool = {
        let mut pools = pools().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
