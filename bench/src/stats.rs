//! The start-up figures' statistics: a median, and how far a ratio of two
//! medians can be trusted.

use std::time::Duration;

/// The median (the upper of the middle two for an even count).
pub fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// A 95% interval for the ratio of `subject`'s median to `floor`'s: the
/// 2.5th and 97.5th percentiles of that ratio over 2,000 resamplings
/// (with replacement) of both sets of processes, seeded, so the same
/// samples give the same interval.
pub fn ratio_interval(subject: &[Duration], floor: &[Duration]) -> (f64, f64) {
    const RESAMPLINGS: usize = 2_000;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut pick = |len: usize| {
        // xorshift64*: enough to resample, and the same sequence every run.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % len
    };
    let mut ratios: Vec<f64> = (0..RESAMPLINGS)
        .map(|_| {
            let subject: Vec<Duration> = (0..subject.len()).map(|_| subject[pick(subject.len())]).collect();
            let floor: Vec<Duration> = (0..floor.len()).map(|_| floor[pick(floor.len())]).collect();
            median(&subject).as_secs_f64() / median(&floor).as_secs_f64().max(1e-9)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[RESAMPLINGS * 25 / 1000], ratios[RESAMPLINGS * 975 / 1000 - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenths_of_ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|tenths| Duration::from_micros(*tenths * 100)).collect()
    }

    #[test]
    fn the_interval_holds_the_ratio_of_the_medians_and_narrows_with_more_processes() {
        let floor: Vec<u64> = (0..15).map(|i| 40 + i % 7).collect();
        let subject: Vec<u64> = floor.iter().map(|tenths| tenths * 3 / 2 + (tenths % 5)).collect();
        let (floor, subject) = (tenths_of_ms(&floor), tenths_of_ms(&subject));
        let ratio = median(&subject).as_secs_f64() / median(&floor).as_secs_f64();
        let (low, high) = ratio_interval(&subject, &floor);
        assert!(low <= ratio && ratio <= high, "{low} ≤ {ratio} ≤ {high}");
        assert!(high > low, "varied samples give an interval, not a point");
        assert_eq!(ratio_interval(&subject, &floor), (low, high), "seeded: the same samples, the same interval");

        let (floor_more, subject_more) = (floor.repeat(7), subject.repeat(7));
        let (low_more, high_more) = ratio_interval(&subject_more, &floor_more);
        assert!(high_more - low_more < high - low, "{low_more}–{high_more} narrower than {low}–{high}");
    }

    #[test]
    fn identical_processes_give_a_point() {
        let floor = tenths_of_ms(&[50; 9]);
        let subject = tenths_of_ms(&[75; 9]);
        assert_eq!(ratio_interval(&subject, &floor), (1.5, 1.5));
    }
}
