//! The interval timer's schedule: when the next tick is due, which ticks are skipped because a
//! block was still being built, and the seeded draws of random block times. Time is a
//! `Duration` since the miner started, given by the caller: the actor reads it from the tokio
//! clock (so paused-time tests drive it), the model test from its own counter.

use std::time::Duration;

use hearth_messages::miner::IntervalMining;

/// SplitMix64: a tiny seeded generator, enough to spread random block times (no crate needed,
/// and a seed makes runs repeatable).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration drawn uniformly (to the millisecond) from `[min, max]`.
    pub(crate) fn between(&mut self, min: Duration, max: Duration) -> Duration {
        let (lo, hi) = (min.as_millis() as u64, max.as_millis() as u64);
        let span = hi.saturating_sub(lo).saturating_add(1);
        Duration::from_millis(lo + self.next_u64() % span)
    }
}

/// What a tick of the timer comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// Interval mining is off: no block, no next tick.
    Off,
    /// The tick came due while a block was being built: no block, `skipped` due times
    /// counted (`total` so far), the next tick at `next`.
    Skipped { skipped: u64, total: u64, next: Duration },
    /// Mine a block now; the next tick is at `next`.
    Mine { next: Duration },
}

/// The interval timer.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    interval: Option<IntervalMining>,
    rng: SplitMix64,
    /// When the pending tick is due.
    due: Duration,
    /// Start and end of the last block build, to tell a tick that came due during one.
    last_build: (Duration, Duration),
    ticks_skipped: u64,
}

impl Schedule {
    /// A timer for `interval` (`None`: off), drawing random block times from `seed`.
    pub(crate) fn new(interval: Option<IntervalMining>, seed: u64) -> Self {
        Self {
            interval,
            rng: SplitMix64(seed),
            due: Duration::ZERO,
            last_build: (Duration::ZERO, Duration::ZERO),
            ticks_skipped: 0,
        }
    }

    /// The interval setting.
    pub(crate) fn interval(&self) -> Option<IntervalMining> {
        self.interval
    }

    /// Ticks skipped so far.
    pub(crate) fn ticks_skipped(&self) -> u64 {
        self.ticks_skipped
    }

    /// Changes the interval and re-arms from `now`.
    pub(crate) fn set_interval(
        &mut self,
        interval: Option<IntervalMining>,
        now: Duration,
    ) -> Option<Duration> {
        self.interval = interval;
        self.arm(now)
    }

    /// (Re)arms the timer from `now`: answers when the first tick is due, or `None` when
    /// interval mining is off.
    pub(crate) fn arm(&mut self, now: Duration) -> Option<Duration> {
        let interval = self.interval?;
        let delay = self.draw(interval);
        self.due = later(now, delay);
        Some(self.due)
    }

    fn draw(&mut self, interval: IntervalMining) -> Duration {
        match interval {
            IntervalMining::Fixed(block_time) => block_time,
            IntervalMining::Range { min, max } => self.rng.between(min, max),
        }
    }

    /// The tick due now fired at `now`. A tick that came due while a block was being built (the
    /// actor does nothing else then, so it fires late) is skipped and counted, never made up for.
    pub(crate) fn tick(&mut self, now: Duration) -> Tick {
        let Some(interval) = self.interval else { return Tick::Off };
        let due = self.due;
        let (build_start, build_end) = self.last_build;
        if build_start <= due && due < build_end {
            let skipped = match interval {
                // Every due time the build covered is skipped; the grid stays in phase.
                IntervalMining::Fixed(block_time) => {
                    let late = build_end - due;
                    let missed = late.as_nanos() / block_time.as_nanos().max(1) + 1;
                    let missed = u32::try_from(missed).unwrap_or(u32::MAX);
                    self.due = later(due, block_time.saturating_mul(missed));
                    u64::from(missed)
                }
                IntervalMining::Range { .. } => {
                    let delay = self.draw(interval);
                    self.due = later(build_end, delay);
                    1
                }
            };
            self.ticks_skipped += skipped;
            return Tick::Skipped { skipped, total: self.ticks_skipped, next: self.due };
        }
        // Fixed block times stay on their grid (no drift from how long building takes).
        self.due = match interval {
            IntervalMining::Fixed(block_time) => later(due, block_time),
            IntervalMining::Range { .. } => later(now, self.draw(interval)),
        };
        Tick::Mine { next: self.due }
    }

    /// A block build (or a series' chunk) ran from `started` to `ended`.
    pub(crate) fn build_ran(&mut self, started: Duration, ended: Duration) {
        self.last_build = (started, ended);
    }
}

/// `at + delay`, or `at` when that overflows. Interval settings are capped at
/// [`IntervalMining::MAX`] where they are parsed, so this only keeps a clock that has run for
/// ages (or a bug) from panicking the miner.
fn later(at: Duration, delay: Duration) -> Duration {
    at.checked_add(delay.min(IntervalMining::MAX)).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn random_block_times_stay_in_range_and_repeat_with_the_seed() {
        let (min, max) = (Duration::from_millis(1000), Duration::from_millis(3000));
        let draws = |seed| {
            let mut rng = SplitMix64(seed);
            (0..1000).map(|_| rng.between(min, max)).collect::<Vec<_>>()
        };
        let first = draws(7);
        assert!(first.iter().all(|d| (min..=max).contains(d)));
        assert_eq!(first, draws(7), "same seed, same block times");
        assert_ne!(first, draws(8));
        assert!(first.contains(&min) || first.iter().any(|d| *d < Duration::from_millis(1010)));
        let same = SplitMix64(1).between(min, min);
        assert_eq!(same, min);
    }

    /// The core of the actor test `a_tick_due_while_a_block_is_built_is_skipped_and_counted`,
    /// without a runtime: 1 s ticks, builds of 2.5 s.
    #[test]
    fn ticks_due_during_a_build_are_skipped_and_the_grid_stays_in_phase() {
        let mut schedule = Schedule::new(Some(IntervalMining::Fixed(SECOND)), 7);
        assert_eq!(schedule.arm(Duration::ZERO), Some(SECOND));
        assert_eq!(schedule.tick(SECOND), Tick::Mine { next: 2 * SECOND });
        let built = SECOND + Duration::from_millis(2500);
        schedule.build_ran(SECOND, built);
        // The 2 s tick fires when the build ends: it and the 3 s one were covered.
        assert_eq!(schedule.tick(built), Tick::Skipped { skipped: 2, total: 2, next: 4 * SECOND });
        assert_eq!(schedule.tick(4 * SECOND), Tick::Mine { next: 5 * SECOND });
        schedule.build_ran(4 * SECOND, Duration::from_millis(6500));
        let tick = schedule.tick(Duration::from_millis(6500));
        assert_eq!(tick, Tick::Skipped { skipped: 2, total: 4, next: 7 * SECOND });
        assert_eq!(schedule.ticks_skipped(), 4);
    }

    #[test]
    fn an_idle_timer_neither_mines_nor_counts() {
        let mut schedule = Schedule::new(None, 7);
        assert_eq!(schedule.arm(SECOND), None);
        assert_eq!(schedule.tick(2 * SECOND), Tick::Off);
        let range = IntervalMining::range(SECOND, 3 * SECOND).unwrap();
        let due = schedule.set_interval(Some(range), SECOND).unwrap();
        assert!((2 * SECOND..=4 * SECOND).contains(&due));
    }
}
