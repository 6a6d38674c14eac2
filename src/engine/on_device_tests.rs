use super::*;

/// The CPU backend never says a pair's work is on a GPU (the element's live wait would
/// then hold its worker threads to one frame at a time), with or without companions.
#[test]
fn cpu_scorer_does_not_compute_on_device() {
    for companions in [
        Companions::default(),
        Companions {
            psnr: true,
            ..Default::default()
        },
    ] {
        let s = Scorer::new(ScorerConfig {
            threads: 1,
            backend: BackendKind::Cpu,
            companions,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.backend_name(), "cpu");
        assert!(!s.computes_on_device(), "{companions:?}");
    }
}
