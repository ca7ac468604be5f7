//! Turning one run's samples into numbers, and runs into medians.

use std::time::Duration;

use crate::harness::bench::workloads::Sample;

/// The numbers of one run of one workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RunStats {
    /// Executions completed per second of wall time.
    pub(crate) throughput: f64,
    /// Median latency of one execution, in ms.
    pub(crate) p50_ms: f64,
    /// 99th percentile latency of one execution, in ms.
    pub(crate) p99_ms: f64,
    /// Median latency of the resume alone, in ms (park workloads only).
    pub(crate) resume_p50_ms: Option<f64>,
}

impl RunStats {
    /// The numbers of a run that completed `samples` in `elapsed`.
    pub(crate) fn of(samples: &[Sample], elapsed: Duration) -> Self {
        let mut totals: Vec<Duration> = samples.iter().map(|s| s.total).collect();
        let mut resumes: Vec<Duration> = samples.iter().filter_map(|s| s.resume).collect();
        totals.sort_unstable();
        resumes.sort_unstable();
        let secs = elapsed.as_secs_f64();
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        let throughput = if secs > 0.0 {
            samples.len() as f64 / secs
        } else {
            0.0
        };
        Self {
            throughput,
            p50_ms: ms(percentile(&totals, 0.50)),
            p99_ms: ms(percentile(&totals, 0.99)),
            resume_p50_ms: (!resumes.is_empty()).then(|| ms(percentile(&resumes, 0.50))),
        }
    }
}

/// The `q`-quantile of `sorted` by the nearest-rank method (the smallest
/// value with at least `q` of the values at or below it); zero when empty.
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Counts stay far below 2^53; the rank is in 1..=len.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The median of `values` (the mean of the middle two for an even count);
/// NaN when empty.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A duration in milliseconds, fractional.
fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(values: &[u64]) -> Vec<Duration> {
        values.iter().copied().map(Duration::from_millis).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted = millis(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&sorted, 0.50), Duration::from_millis(50));
        assert_eq!(percentile(&sorted, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&sorted, 1.0), Duration::from_millis(100));
        assert_eq!(percentile(&millis(&[7]), 0.99), Duration::from_millis(7));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < 1e-12);
        assert!((median(&[4.0, 1.0, 3.0, 2.0]) - 2.5).abs() < 1e-12);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn a_run_of_samples() {
        let samples: Vec<Sample> = (1..=10)
            .map(|i| Sample {
                total: Duration::from_millis(i),
                resume: (i % 2 == 0).then(|| Duration::from_millis(i / 2)),
            })
            .collect();
        let stats = RunStats::of(&samples, Duration::from_millis(500));
        assert!((stats.throughput - 20.0).abs() < 1e-9);
        assert!((stats.p50_ms - 5.0).abs() < 1e-9);
        assert!((stats.p99_ms - 10.0).abs() < 1e-9);
        assert_eq!(stats.resume_p50_ms, Some(3.0));
    }
}
