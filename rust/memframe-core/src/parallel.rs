//! Batch work on a rayon pool of a chosen size (pools are built once per size and reused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::Error;

/// The most threads a batch may ask for. Far more than any batch gains from (the work is CPU
/// bound), and small enough that a mistyped count cannot exhaust the process's threads.
pub const MAX_THREADS: usize = 1024;

fn pools() -> &'static Mutex<HashMap<usize, Arc<ThreadPool>>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Number of threads used when the caller does not choose (all cores, at most
/// [`MAX_THREADS`]).
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
}

/// The thread count for `threads`: `None` is [`default_threads`]; a count outside
/// `1..=MAX_THREADS` is [`Error::InvalidThreads`].
pub fn check_threads(threads: Option<usize>) -> Result<usize, Error> {
    match threads {
        None => Ok(default_threads()),
        Some(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Some(n) => Err(Error::invalid_threads(n)),
    }
}

/// Run `work` inside a pool of `threads` threads (already checked).
fn with_threads<R: Send>(threads: usize, work: impl FnOnce() -> R + Send) -> Result<R, Error> {
    let pool = {
        let mut pools = pools()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match pools.get(&threads) {
            Some(pool) => Arc::clone(pool),
            None => {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(move |i| format!("memframe-{threads}-{i}"))
                    .build()
                    .map_err(|source| Error::ThreadPool { threads, source })?;
                Arc::clone(pools.entry(threads).or_insert(Arc::new(pool)))
            }
        }
    };
    Ok(pool.install(work))
}

/// `f` over every item, in order, on `threads` threads (`None`: all cores); each task takes at
/// least `min_len` items. One thread (or one item) runs on the calling thread: handing the
/// batch to a pool worker costs more than it saves (measured: a one-thread scan batch ran ~20%
/// slower). Err when `threads` is out of range ([`check_threads`]) or the pool cannot start.
pub fn map_items<T: Sync, R: Send>(
    threads: Option<usize>,
    items: &[T],
    min_len: usize,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Result<Vec<R>, Error> {
    let threads = check_threads(threads)?;
    if threads == 1 || items.len() <= 1 {
        return Ok(items.iter().map(f).collect());
    }
    with_threads(threads, || {
        items.par_iter().with_min_len(min_len).map(f).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn thread_counts_out_of_range_are_errors() {
        for bad in [0, MAX_THREADS + 1, usize::MAX] {
            let err = map_items(Some(bad), &[1, 2, 3], 1, |x| x * 2).expect_err("refused");
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            assert!(err.to_string().contains(&bad.to_string()), "{err}");
        }
        // refused before any work, even when there is nothing to do
        assert!(map_items(Some(0), &[] as &[u8], 1, |x| *x).is_err());
    }

    #[test]
    fn every_valid_count_gives_the_same_result() {
        let items: Vec<u32> = (0..100).collect();
        let expected: Vec<u32> = items.iter().map(|x| x * 3).collect();
        for threads in [None, Some(1), Some(2), Some(3)] {
            let got = map_items(threads, &items, 4, |x| x * 3).expect("runs");
            assert_eq!(got, expected, "{threads:?}");
        }
        assert_eq!(check_threads(None).expect("default"), default_threads());
        assert!((1..=MAX_THREADS).contains(&default_threads()));
    }
}
