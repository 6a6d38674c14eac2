//! The CPU backend: a pool of worker threads, one frame per job, results reordered by submission.
//!
//! Each worker takes the next job from a shared channel, computes it with
//! [`super::compute_job_cpu`] (the fixed-point reference code) and the clip's configuration
//! ([`Backend::configure`], sent along with each job) and sends the result back. The
//! results arrive in any order; [`CpuBackend::receive`] hands them out in submission order. The
//! numbers cannot depend on the number of threads: every frame is computed by one thread with the
//! same integer code.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{Backend, ClipConfig, FrameAccum, FrameJob, compute_job_cpu};
use crate::error::{Error, Result};

/// A job tagged with the generation it belongs to (bumped by `reset`), with the configuration
/// it is computed with.
type Tagged = (u64, Arc<ClipConfig>, FrameJob);
/// A result: generation, frame index, accumulators or the error of a worker that panicked.
type Done = (u64, u64, std::result::Result<FrameAccum, String>);

pub struct CpuBackend {
    threads: usize,
    /// What the jobs submitted from now on are computed with ([`Backend::configure`]).
    config: Arc<ClipConfig>,
    jobs: Option<Sender<Tagged>>,
    results: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    /// Current generation: results of older generations (jobs in flight at a reset) are dropped.
    generation: u64,
    /// The same, shared with the workers so that they skip stale jobs instead of computing them.
    live_generation: Arc<AtomicU64>,
    /// Indices submitted and not yet handed out, in submission order.
    in_flight: VecDeque<u64>,
    /// Results that arrived before their turn.
    ready: HashMap<u64, FrameAccum>,
}

impl CpuBackend {
    /// A pool of `threads` workers (0 = one per available core).
    pub fn new(threads: usize) -> Result<CpuBackend> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        let (job_tx, job_rx) = mpsc::channel::<Tagged>();
        let (res_tx, res_rx) = mpsc::channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let live_generation = Arc::new(AtomicU64::new(0));
        let mut workers = Vec::with_capacity(threads);
        for n in 0..threads {
            let job_rx = Arc::clone(&job_rx);
            let res_tx = res_tx.clone();
            let live = Arc::clone(&live_generation);
            let handle = std::thread::Builder::new()
                .name(format!("vmafgpu-cpu-{n}"))
                .spawn(move || worker(job_rx, res_tx, live))
                .map_err(|e| Error::Backend(format!("cannot start a CPU worker thread: {e}")))?;
            workers.push(handle);
        }
        Ok(CpuBackend {
            threads,
            config: Arc::new(ClipConfig::default()),
            jobs: Some(job_tx),
            results: res_rx,
            workers,
            generation: 0,
            live_generation,
            in_flight: VecDeque::new(),
            ready: HashMap::new(),
        })
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// File one result; errors of the current generation are returned.
    fn file(&mut self, done: Done) -> Result<()> {
        let (generation, index, res) = done;
        if generation != self.generation {
            return Ok(());
        }
        match res {
            Ok(acc) => {
                self.ready.insert(index, acc);
                Ok(())
            }
            Err(msg) => {
                // The frame is lost: forget it so that the engine is not left waiting for it.
                self.in_flight.retain(|&i| i != index);
                Err(Error::Backend(format!(
                    "CPU worker failed on frame {index}: {msg}"
                )))
            }
        }
    }
}

fn worker(jobs: Arc<Mutex<Receiver<Tagged>>>, results: Sender<Done>, live: Arc<AtomicU64>) {
    loop {
        // Hold the lock only while taking a job (a poisoned lock cannot happen: nothing panics
        // while holding it, but treat it as shutdown rather than panic).
        let next = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((generation, cfg, job)) = next else {
            return; // the backend was dropped
        };
        if generation != live.load(Ordering::Acquire) {
            continue; // reset or shut down since it was queued: nobody wants the result
        }
        let index = job.index;
        let res = catch_unwind(AssertUnwindSafe(|| compute_job_cpu(&cfg, &job)))
            .map_err(|p| {
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into())
            })
            .and_then(|r| r.map_err(|e| e.to_string()));
        drop(job);
        if results.send((generation, index, res)).is_err() {
            return;
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn submit(&mut self, job: FrameJob) -> Result<()> {
        let index = job.index;
        let tx = self
            .jobs
            .as_ref()
            .ok_or_else(|| Error::Backend("CPU backend is shut down".into()))?;
        tx.send((self.generation, Arc::clone(&self.config), job))
            .map_err(|_| Error::Backend("CPU worker threads have exited".into()))?;
        self.in_flight.push_back(index);
        Ok(())
    }

    fn configure(&mut self, cfg: &ClipConfig) -> Result<()> {
        self.config = Arc::new(*cfg);
        Ok(())
    }

    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>> {
        loop {
            let Some(&next) = self.in_flight.front() else {
                return Ok(None);
            };
            if let Some(acc) = self.ready.remove(&next) {
                self.in_flight.pop_front();
                return Ok(Some((next, acc)));
            }
            let done = if wait {
                self.results
                    .recv()
                    .map_err(|_| Error::Backend("CPU worker threads have exited".into()))?
            } else {
                match self.results.try_recv() {
                    Ok(d) => d,
                    Err(TryRecvError::Empty) => return Ok(None),
                    Err(TryRecvError::Disconnected) => {
                        return Err(Error::Backend("CPU worker threads have exited".into()));
                    }
                }
            };
            self.file(done)?;
        }
    }

    fn reset(&mut self) {
        self.generation += 1;
        self.live_generation
            .store(self.generation, Ordering::Release);
        self.in_flight.clear();
        self.ready.clear();
    }

    fn max_in_flight(&self) -> usize {
        // Enough to keep every worker busy while the engine turns results into scores.
        2 * self.threads
    }
}

impl Drop for CpuBackend {
    fn drop(&mut self) {
        // Queued jobs are skipped, and closing the job channel ends every worker after its
        // current job.
        self.live_generation.store(u64::MAX, Ordering::Release);
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
