//! Host-side staging of planes into page-locked memory for the GPU backends: the threads that
//! convert compact `u16` planes (8-bit content as bytes) or copy the rows of host planes into a
//! slot's staging buffer in parallel. Staging is memory-bound and one core copies only a few
//! GB/s, so a frame is split across threads. No driver calls here: the caller owns the memory.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::backend::HostPlane;

/// Host-side conversion of a plane into staging memory: 8-bit content as bytes, deeper content
/// as little-endian u16 (a plain copy on little-endian hosts).
pub(crate) fn convert(src: &[u16], dst: &mut [u8], eight_bit: bool) {
    if eight_bit {
        for (o, v) in dst.iter_mut().zip(src) {
            *o = *v as u8;
        }
    } else if cfg!(target_endian = "little") {
        // SAFETY: u16 has no padding and every byte pattern is a valid u8; the byte view covers
        // exactly the 2 * len bytes of `src` and lives no longer than it.
        let bytes = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const u8, src.len() * 2) };
        dst[..bytes.len()].copy_from_slice(bytes);
    } else {
        for (o, v) in dst.chunks_exact_mut(2).zip(src) {
            o.copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// One chunk of a plane for a staging thread: raw pointers because the pool threads outlive
/// the borrow; `StagePool::convert_all` blocks until every chunk is done, so they stay valid.
pub(crate) struct Chunk {
    src: *const u16,
    dst: *mut u8,
    len: usize,
    eight_bit: bool,
}
// SAFETY: a Chunk is only dereferenced by one pool thread while StagePool::convert_all, which
// owns the borrows it was made from, waits for that thread to report completion.
unsafe impl Send for Chunk {}

/// Rows of a host plane for a staging thread (as [`Chunk`]: `StagePool::copy_rows` waits).
pub(crate) struct Rows {
    src: *const u8,
    stride: usize,
    dst: *mut u8,
    row: usize,
    rows: usize,
    /// The plane's [`HostPlane::shift`]: each 2-byte sample is shifted down by it on the way.
    shift: u8,
}
// SAFETY: as Chunk.
unsafe impl Send for Rows {}

impl Rows {
    /// Copy the rows, compacted (`row` bytes each) into dst, shifting 2-byte samples down by
    /// `shift`.
    ///
    /// # Safety
    /// `src` must be readable for `stride * (rows - 1) + row` bytes, `dst` writable for
    /// `row * rows` bytes, and nothing else may write either meanwhile.
    unsafe fn run(&self) {
        if self.rows == 0 {
            return;
        }
        // SAFETY: see the function's contract.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(self.src, self.stride * (self.rows - 1) + self.row),
                std::slice::from_raw_parts_mut(self.dst, self.row * self.rows),
            )
        };
        if self.shift == 0 {
            copy_rows(src, self.stride, dst, self.row);
        } else {
            copy_rows_shifted(src, self.stride, dst, self.row, self.shift);
        }
    }
}

/// Copy rows of `row` bytes, `stride` apart in `src`, back to back into `dst`.
pub(crate) fn copy_rows(src: &[u8], stride: usize, dst: &mut [u8], row: usize) {
    if stride == row {
        dst.copy_from_slice(&src[..dst.len()]);
        return;
    }
    for (y, d) in dst.chunks_exact_mut(row).enumerate() {
        d.copy_from_slice(&src[y * stride..y * stride + row]);
    }
}

/// [`copy_rows`] for MSB-aligned 2-byte little-endian samples (P010), each shifted down by
/// `shift` on the way: what the GPU kernels read is then the samples, as for I420_10LE.
pub(crate) fn copy_rows_shifted(src: &[u8], stride: usize, dst: &mut [u8], row: usize, shift: u8) {
    for (y, d) in dst.chunks_exact_mut(row).enumerate() {
        let s = &src[y * stride..y * stride + row];
        for (o, i) in d.chunks_exact_mut(2).zip(s.chunks_exact(2)) {
            o.copy_from_slice(&(u16::from_le_bytes([i[0], i[1]]) >> shift).to_le_bytes());
        }
    }
}

/// Work for a staging thread.
pub(crate) enum StageTask {
    Convert(Chunk),
    Rows(Rows),
}

/// Threads that convert planes into pinned staging memory in parallel (memory bandwidth of one
/// core is the limit of the host side at high frame rates).
pub(crate) struct StagePool {
    txs: Vec<Sender<StageTask>>,
    done: Receiver<()>,
    threads: Vec<JoinHandle<()>>,
}

impl StagePool {
    pub(crate) fn new(helpers: usize) -> StagePool {
        let (done_tx, done) = mpsc::channel();
        let mut txs = Vec::new();
        let mut threads = Vec::new();
        for i in 0..helpers {
            let (tx, rx) = mpsc::channel::<StageTask>();
            let done_tx = done_tx.clone();
            let t = std::thread::Builder::new()
                .name(format!("vmafgpu-stage{i}"))
                .spawn(move || {
                    while let Ok(t) = rx.recv() {
                        let c = match t {
                            StageTask::Convert(c) => c,
                            StageTask::Rows(r) => {
                                // SAFETY: see Rows: StagePool::copy_rows made the task from
                                // live, disjoint slices and waits for the done message below.
                                unsafe { r.run() };
                                if done_tx.send(()).is_err() {
                                    break;
                                }
                                continue;
                            }
                        };
                        // SAFETY: see Chunk: the slices are live and disjoint from every other
                        // chunk's until the done message below is received.
                        let (src, dst) = unsafe {
                            (
                                std::slice::from_raw_parts(c.src, c.len),
                                std::slice::from_raw_parts_mut(
                                    c.dst,
                                    c.len * if c.eight_bit { 1 } else { 2 },
                                ),
                            )
                        };
                        convert(src, dst, c.eight_bit);
                        if done_tx.send(()).is_err() {
                            break;
                        }
                    }
                });
            if let Ok(t) = t {
                txs.push(tx);
                threads.push(t);
            }
        }
        StagePool { txs, done, threads }
    }

    /// Convert `src` into `dst`, split over the pool and the calling thread.
    pub(crate) fn convert(&self, src: &[u16], dst: &mut [u8], eight_bit: bool) {
        self.convert_all(vec![(src, dst)], eight_bit);
    }

    /// Convert each `(src, dst)` plane as [`StagePool::convert`] does, all at once: every
    /// plane's chunks go out in one round (one wait for all of them, not one per plane), the
    /// calling thread taking its share.
    pub(crate) fn convert_all(&self, planes: Vec<(&[u16], &mut [u8])>, eight_bit: bool) {
        let parts = self.txs.len() + 1;
        let bps = if eight_bit { 1 } else { 2 };
        let total: usize = planes.iter().map(|(s, _)| s.len()).sum();
        // Chunks of whole cache lines, at least 64 KiB of samples each (a plane's last chunk
        // may be shorter).
        let per = total.div_ceil(parts).next_multiple_of(64).max(1 << 16);
        let mut chunks: Vec<(&[u16], &mut [u8])> = Vec::new();
        for (src, dst) in planes {
            let (mut s, mut d) = (src, &mut dst[..src.len() * bps]);
            while s.len() > per {
                let (s0, s1) = s.split_at(per);
                let (d0, d1) = std::mem::take(&mut d).split_at_mut(per * bps);
                chunks.push((s0, d0));
                s = s1;
                d = d1;
            }
            chunks.push((s, d));
        }
        let mut sent = 0;
        let mut mine = Vec::new();
        for (k, (s, d)) in chunks.into_iter().enumerate() {
            let helper = k % parts;
            let c = Chunk {
                src: s.as_ptr(),
                dst: d.as_mut_ptr(),
                len: s.len(),
                eight_bit,
            };
            if helper < self.txs.len() && self.txs[helper].send(StageTask::Convert(c)).is_ok() {
                sent += 1;
            } else {
                mine.push((s, d));
            }
        }
        for (s, d) in mine {
            convert(s, d, eight_bit);
        }
        for _ in 0..sent {
            // A helper that died cannot have touched its chunk after sending nothing; either
            // way the borrows end here.
            let _ = self.done.recv();
        }
    }

    /// Copy the rows of `src` back to back into `dst` (at least `row_bytes * height` bytes),
    /// split over the pool and the calling thread; with `shift`, MSB-aligned samples (P010)
    /// are shifted down on the way ([`HostPlane::shift`]), else copied as stored.
    pub(crate) fn copy_rows(&self, src: &HostPlane, dst: &mut [u8], shift: bool) {
        self.copy_rows_all(vec![(src, dst)], shift);
    }

    /// [`StagePool::copy_rows`] for several planes at once: every plane's runs of rows go out
    /// in one round (one wait for all), the calling thread taking its share.
    pub(crate) fn copy_rows_all(&self, planes: Vec<(&HostPlane, &mut [u8])>, shift: bool) {
        let parts = self.txs.len() + 1;
        let total: usize = planes.iter().map(|(p, _)| p.row_bytes() * p.height()).sum();
        // Runs of whole rows, at least 64 KiB each (a plane's last run may be shorter).
        let per_bytes = total.div_ceil(parts).max(1 << 16);
        let mut runs: Vec<Rows> = Vec::new();
        for (src, dst) in planes {
            let (row, stride, h) = (src.row_bytes(), src.stride(), src.height());
            let per = per_bytes.div_ceil(row).max(1);
            let bytes = src.bytes();
            let mut dst_rest = &mut dst[..row * h];
            let mut y = 0;
            while y < h {
                let rows = per.min(h - y);
                let (d0, d1) = std::mem::take(&mut dst_rest).split_at_mut(rows * row);
                runs.push(Rows {
                    src: bytes[y * stride..].as_ptr(),
                    stride,
                    dst: d0.as_mut_ptr(),
                    row,
                    rows,
                    shift: if shift { src.shift() } else { 0 },
                });
                dst_rest = d1;
                y += rows;
            }
        }
        let mut sent = 0;
        let mut mine = Vec::new();
        for (k, r) in runs.into_iter().enumerate() {
            let helper = k % parts;
            if helper < self.txs.len() {
                match self.txs[helper].send(StageTask::Rows(r)) {
                    Ok(()) => sent += 1,
                    Err(e) => match e.0 {
                        StageTask::Rows(r) => mine.push(r),
                        StageTask::Convert(_) => unreachable!("sent rows"),
                    },
                }
            } else {
                mine.push(r);
            }
        }
        for r in mine {
            // SAFETY: each run was made above from a live plane's rows (HostPlane::new checked
            // they lie in its bytes) and a disjoint part of its `dst`, both borrowed until this
            // function returns.
            unsafe { r.run() };
        }
        for _ in 0..sent {
            let _ = self.done.recv();
        }
    }
}

impl Drop for StagePool {
    fn drop(&mut self) {
        self.txs.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Threads that stage a frame (the worker and its helpers): one per core up to 16. Staging is
/// memory-bound and one core copies only a few GB/s, so more threads shorten it (BENCHMARKS.md,
/// "Figures moved from code comments").
pub(crate) fn stage_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::HostBytes;
    use std::sync::Arc;

    /// Several planes staged in one round (StagePool::convert_all): each plane's samples land
    /// in its own destination, bytes for 8-bit and little-endian u16 otherwise, whatever the
    /// split (planes smaller than a chunk, planes of several chunks, more chunks than threads,
    /// a pool without helpers); bytes past each plane's part are left alone.
    #[test]
    fn stage_pool_converts_all_planes_at_once() {
        let mut mismatches = Vec::new();
        for helpers in [0usize, 1, 3, 7] {
            let pool = StagePool::new(helpers);
            for eight_bit in [true, false] {
                let sizes = [
                    1usize,
                    33 * 33,
                    1 << 16,
                    (1 << 17) + 5,
                    1920 * 1080,
                    960 * 540,
                ];
                let srcs: Vec<Vec<u16>> = sizes
                    .iter()
                    .enumerate()
                    .map(|(k, &n)| {
                        (0..n)
                            .map(|i| {
                                let v = (i * 31 + k * 7 + i / 509) as u16;
                                if eight_bit { v & 0xff } else { v }
                            })
                            .collect()
                    })
                    .collect();
                let bps = if eight_bit { 1 } else { 2 };
                let mut dsts: Vec<Vec<u8>> =
                    sizes.iter().map(|&n| vec![0xA5u8; n * bps + 3]).collect();
                let planes: Vec<(&[u16], &mut [u8])> = srcs
                    .iter()
                    .zip(dsts.iter_mut())
                    .map(|(s, d)| (&s[..], &mut d[..]))
                    .collect();
                pool.convert_all(planes, eight_bit);
                for (k, (src, dst)) in srcs.iter().zip(&dsts).enumerate() {
                    let mut want = vec![0xA5u8; src.len() * bps + 3];
                    convert(src, &mut want, eight_bit);
                    if *dst != want {
                        mismatches.push((helpers, eight_bit, k));
                    }
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "(helpers, 8-bit, plane): {mismatches:?}"
        );
    }

    /// Host planes copied into staging on the stage threads: every row compacted, in order,
    /// whatever the split (small planes on the caller alone, large ones over the pool), 8- and
    /// 16-bit rows, odd strides.
    #[test]
    fn stage_pool_copies_host_plane_rows() {
        let pool = StagePool::new(3);
        for &(w, h, bpc, pad) in &[
            (33usize, 33usize, 8u8, 0usize),
            (67, 45, 10, 7),
            (1920, 1080, 8, 64),
            (3840, 2160, 10, 3),
            (4001, 99, 12, 1),
        ] {
            let bps = if bpc > 8 { 2 } else { 1 };
            let stride = w * bps + pad;
            let len = stride * h + 5;
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let owner: Arc<dyn HostBytes> = Arc::new(bytes.clone());
            let p = HostPlane::new(owner, 5, stride, w, h, bpc).unwrap();
            let mut dst = vec![0xEEu8; w * bps * h + 16];
            pool.copy_rows(&p, &mut dst, true);
            let row = w * bps;
            for y in 0..h {
                let s = 5 + y * stride;
                assert_eq!(
                    &dst[y * row..(y + 1) * row],
                    &bytes[s..s + row],
                    "{w}x{h}@{bpc} row {y}"
                );
            }
            assert!(
                dst[row * h..].iter().all(|&b| b == 0xEE),
                "{w}x{h}: wrote past the plane"
            );
        }
    }

    /// MSB-aligned planes (P010) are shifted down while staged where asked (else copied as
    /// stored, for the GPU to shift): every sample of every row, whatever the split, and
    /// nothing written past the plane.
    #[test]
    fn stage_pool_shifts_msb_aligned_rows() {
        let pool = StagePool::new(3);
        for &(w, h, pad, shift, apply) in &[
            (33usize, 33usize, 0usize, 6u8, true),
            (1920, 1080, 64, 6, true),
            (1921, 541, 6, 4, true),
            (1920, 1080, 64, 6, false),
        ] {
            let stride = 2 * w + pad;
            let len = stride * h + 3;
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 253) as u8).collect();
            let owner: Arc<dyn HostBytes> = Arc::new(bytes.clone());
            let p = HostPlane::new(owner, 3, stride, w, h, 16 - shift)
                .unwrap()
                .with_shift(shift)
                .unwrap();
            let mut dst = vec![0xEEu8; 2 * w * h + 16];
            pool.copy_rows(&p, &mut dst, apply);
            let down = if apply { shift } else { 0 };
            let mut bad = Vec::new();
            for y in 0..h {
                for x in 0..w {
                    let s = 3 + y * stride + 2 * x;
                    let want = u16::from_le_bytes([bytes[s], bytes[s + 1]]) >> down;
                    let o = 2 * (y * w + x);
                    let got = u16::from_le_bytes([dst[o], dst[o + 1]]);
                    if got != want {
                        bad.push((x, y, got, want));
                    }
                }
            }
            assert!(
                bad.is_empty(),
                "{w}x{h} >> {down}: {} samples differ, first {:?}",
                bad.len(),
                &bad[..bad.len().min(4)]
            );
            assert!(
                dst[2 * w * h..].iter().all(|&b| b == 0xEE),
                "{w}x{h}: wrote past the plane"
            );
        }
    }
}
