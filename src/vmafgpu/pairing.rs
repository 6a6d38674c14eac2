//! Which reference and distorted frames belong together: the element's flow decisions, as a pure
//! function of the two pads' head frames (no GStreamer objects, so every rule is unit-tested).

use super::Sync;

/// What the element knows about the frame at the head of one sink pad.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Running time of the buffer's PTS in its pad's segment (None: no PTS or outside the
    /// segment).
    pub running_time: Option<gst::ClockTime>,
    /// The buffer's duration, else one frame at the pad's framerate, else None.
    pub duration: Option<gst::ClockTime>,
    /// A GAP (the aggregator's form of a GAP event: a dropped frame), no picture.
    pub gap: bool,
}

/// Why a frame has no partner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unpaired {
    /// The other pad has already passed this frame's running time (a frame dropped on the other
    /// side, or streams that do not overlap).
    Passed,
    /// The other pad is at EOS.
    PartnerEos,
    /// Live: the partner did not arrive before the aggregator's deadline.
    Timeout,
    /// `sync=index`: the other pad has a GAP (a dropped frame) in this frame's slot.
    Gap,
}

/// One flow decision of `aggregate()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Pop both heads and score them together. `untimed`: paired by arrival order although
    /// `sync=timestamp`, because a head has no running time.
    Pair { untimed: bool },
    /// Pop the reference head: it has no partner.
    DropRef(Unpaired),
    /// Pop the distorted head and pass it on unscored: it has no partner.
    PassDist(Unpaired),
    /// `sync=index`, a GAP at the head of at least one pad: the GAP is its pad's frame of this
    /// slot. Pop both heads; a frame head is unmatched (`Unpaired::Gap`); the distorted head
    /// (frame or GAP) passes on unscored.
    GapSlot { ref_gap: bool, dist_gap: bool },
    /// Pop a GAP head that has no slot partner to take (`sync=timestamp`, where the running
    /// times pair the frames around it, or the other pad at EOS or past the live deadline):
    /// the reference one is dropped, the distorted one passes on.
    SkipGap { is_ref: bool },
    /// Wait for more data.
    NeedData,
    /// Both pads are at EOS with nothing queued.
    Eos,
}

/// Half a frame duration, the pairing tolerance under `sync=timestamp`: the reference frame's
/// duration if known, else the distorted one's. Without any duration only equal running times
/// pair.
fn tolerance(r: &Head, d: &Head) -> gst::ClockTime {
    r.duration
        .or(d.duration)
        .map_or(gst::ClockTime::ZERO, |dur| dur / 2)
}

/// Decide what to do with the two heads.
///
/// Under `sync=timestamp`, frames whose running times differ by less than half a frame duration
/// pair (exactly equal ones when no duration is known); otherwise the earlier head can no longer
/// find a partner (the other pad's frames only get later) and is dropped as unmatched. Under
/// `sync=index` the heads pair in arrival order. In both modes a head whose partner pad is at
/// EOS, or (live, `timeout`) whose partner did not arrive before the deadline, is unmatched.
pub fn decide(
    sync: Sync,
    r: Option<Head>,
    d: Option<Head>,
    ref_eos: bool,
    dist_eos: bool,
    timeout: bool,
) -> Decision {
    let ref_gap = r.is_some_and(|h| h.gap);
    let dist_gap = d.is_some_and(|h| h.gap);
    if ref_gap || dist_gap {
        return match sync {
            Sync::Timestamp => Decision::SkipGap { is_ref: ref_gap },
            Sync::Index if r.is_some() && d.is_some() => Decision::GapSlot { ref_gap, dist_gap },
            Sync::Index if (ref_gap && dist_eos) || (dist_gap && ref_eos) || timeout => {
                Decision::SkipGap { is_ref: ref_gap }
            }
            Sync::Index => Decision::NeedData,
        };
    }
    match (r, d) {
        (Some(r), Some(d)) => match sync {
            Sync::Index => Decision::Pair { untimed: false },
            Sync::Timestamp => match (r.running_time, d.running_time) {
                (Some(rt), Some(dt)) => {
                    let tol = tolerance(&r, &d);
                    let diff = if rt > dt { rt - dt } else { dt - rt };
                    if diff < tol || diff.is_zero() {
                        Decision::Pair { untimed: false }
                    } else if rt < dt {
                        Decision::DropRef(Unpaired::Passed)
                    } else {
                        Decision::PassDist(Unpaired::Passed)
                    }
                }
                _ => Decision::Pair { untimed: true },
            },
        },
        (Some(_), None) if dist_eos => Decision::DropRef(Unpaired::PartnerEos),
        (Some(_), None) if timeout => Decision::DropRef(Unpaired::Timeout),
        (None, Some(_)) if ref_eos => Decision::PassDist(Unpaired::PartnerEos),
        (None, Some(_)) if timeout => Decision::PassDist(Unpaired::Timeout),
        (None, None) if ref_eos && dist_eos => Decision::Eos,
        _ => Decision::NeedData,
    }
}

/// Whether a pair formed by arrival order (`sync=index`) has running times at least half a frame
/// apart (any difference where no duration is known): the streams are not aligned.
pub fn skewed(r: &Head, d: &Head) -> bool {
    match (r.running_time, d.running_time) {
        (Some(rt), Some(dt)) => {
            let diff = if rt > dt { rt - dt } else { dt - rt };
            !diff.is_zero() && diff >= tolerance(r, d)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> gst::ClockTime {
        gst::ClockTime::from_mseconds(v)
    }

    fn head(rt: u64) -> Option<Head> {
        Some(Head {
            running_time: Some(ms(rt)),
            duration: Some(ms(40)),
            gap: false,
        })
    }

    fn gap(rt: u64) -> Option<Head> {
        Some(Head {
            gap: true,
            ..head(rt).unwrap()
        })
    }

    #[test]
    fn index_gaps_are_their_pads_frames() {
        let s = Sync::Index;
        let slot = |ref_gap, dist_gap| Decision::GapSlot { ref_gap, dist_gap };
        assert_eq!(
            decide(s, head(0), gap(0), false, false, false),
            slot(false, true)
        );
        assert_eq!(
            decide(s, gap(0), head(0), false, false, false),
            slot(true, false)
        );
        assert_eq!(
            decide(s, gap(0), gap(0), false, false, false),
            slot(true, true)
        );
        // a GAP waits for the frame of its slot on the other pad
        assert_eq!(
            decide(s, gap(0), None, false, false, false),
            Decision::NeedData
        );
        assert_eq!(
            decide(s, None, gap(0), false, false, false),
            Decision::NeedData
        );
        // ... unless none can come
        assert_eq!(
            decide(s, gap(0), None, false, true, false),
            Decision::SkipGap { is_ref: true }
        );
        assert_eq!(
            decide(s, None, gap(0), true, false, false),
            Decision::SkipGap { is_ref: false }
        );
        assert_eq!(
            decide(s, None, gap(0), false, false, true),
            Decision::SkipGap { is_ref: false }
        );
    }

    #[test]
    fn timestamp_gaps_are_skipped() {
        let s = Sync::Timestamp;
        for (r, d, is_ref) in [
            (gap(0), head(0), true),
            (head(0), gap(0), false),
            (gap(0), gap(0), true),
            (None, gap(0), false),
        ] {
            assert_eq!(
                decide(s, r, d, false, false, false),
                Decision::SkipGap { is_ref }
            );
        }
    }

    #[test]
    fn skew_is_half_a_frame_or_more() {
        let h = |rt| head(rt).unwrap();
        assert!(!skewed(&h(0), &h(19)));
        assert!(skewed(&h(0), &h(20)));
        assert!(skewed(&h(40), &h(0)));
        assert!(!skewed(&h(40), &h(40)));
    }

    const PAIR: Decision = Decision::Pair { untimed: false };

    #[test]
    fn timestamp_pairs_within_half_a_frame() {
        let s = Sync::Timestamp;
        assert_eq!(decide(s, head(0), head(0), false, false, false), PAIR);
        assert_eq!(decide(s, head(40), head(59), false, false, false), PAIR);
        assert_eq!(decide(s, head(59), head(40), false, false, false), PAIR);
        // exactly half a frame apart is not a pair: the earlier one is unmatched
        assert_eq!(
            decide(s, head(40), head(60), false, false, false),
            Decision::DropRef(Unpaired::Passed)
        );
        assert_eq!(
            decide(s, head(80), head(40), false, false, false),
            Decision::PassDist(Unpaired::Passed)
        );
    }

    #[test]
    fn timestamp_tolerance_falls_back_to_the_distorted_duration_then_to_equality() {
        let s = Sync::Timestamp;
        let r = Some(Head {
            running_time: Some(ms(0)),
            duration: None,
            gap: false,
        });
        let d = Some(Head {
            running_time: Some(ms(10)),
            duration: Some(ms(40)),
            gap: false,
        });
        assert_eq!(decide(s, r, d, false, false, false), PAIR);
        let d = Some(Head {
            running_time: Some(ms(10)),
            duration: None,
            gap: false,
        });
        assert_eq!(
            decide(s, r, d, false, false, false),
            Decision::DropRef(Unpaired::Passed)
        );
        let d = Some(Head {
            running_time: Some(ms(0)),
            duration: None,
            gap: false,
        });
        assert_eq!(decide(s, r, d, false, false, false), PAIR);
    }

    #[test]
    fn untimed_heads_pair_by_arrival() {
        let r = Some(Head::default());
        assert_eq!(
            decide(Sync::Timestamp, r, head(5000), false, false, false),
            Decision::Pair { untimed: true }
        );
    }

    #[test]
    fn index_pairs_whatever_the_times() {
        assert_eq!(
            decide(Sync::Index, head(0), head(10_000), false, false, false),
            PAIR
        );
    }

    #[test]
    fn eos_and_timeouts() {
        for s in [Sync::Timestamp, Sync::Index] {
            assert_eq!(
                decide(s, head(0), None, false, false, false),
                Decision::NeedData
            );
            assert_eq!(
                decide(s, None, head(0), false, false, false),
                Decision::NeedData
            );
            assert_eq!(
                decide(s, head(0), None, false, true, false),
                Decision::DropRef(Unpaired::PartnerEos)
            );
            assert_eq!(
                decide(s, None, head(0), true, false, false),
                Decision::PassDist(Unpaired::PartnerEos)
            );
            assert_eq!(
                decide(s, head(0), None, false, false, true),
                Decision::DropRef(Unpaired::Timeout)
            );
            assert_eq!(
                decide(s, None, head(0), false, false, true),
                Decision::PassDist(Unpaired::Timeout)
            );
            // a timeout does not split a pair that is there
            assert_eq!(decide(s, head(0), head(0), false, false, true), PAIR);
            assert_eq!(
                decide(s, None, None, true, false, false),
                Decision::NeedData
            );
            assert_eq!(decide(s, None, None, false, true, true), Decision::NeedData);
            assert_eq!(decide(s, None, None, true, true, false), Decision::Eos);
        }
    }
}
