//! Request metrics, rendered in the Prometheus text format on `GET /metrics`.
//!
//! Hot-path counters are striped: each actix-web worker thread writes its own cache-padded
//! stripe (no atomic shared by every thread, no lock), and a scrape sums the stripes. Methods
//! are counted by name from a fixed, sorted table of the core methods (a binary search, no
//! map and no allocation per request); anything else is counted as `other`. Gauges that other
//! actors own (pool size, code cache, mining) are asked for at scrape time.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::core::RpcError;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5];

/// Why a request was shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The executor pool refused the call (queue delay over budget, or queue full).
    ExecutorBusy = 0,
    /// An actor's mailbox was full.
    MailboxFull = 1,
    /// The transaction pool was at its bound.
    TxpoolFull = 2,
    /// A batch had more items than allowed.
    BatchTooLarge = 3,
}

const REJECTIONS: [(&str, Rejection); 4] = [
    ("executor_busy", Rejection::ExecutorBusy),
    ("mailbox_full", Rejection::MailboxFull),
    ("txpool_full", Rejection::TxpoolFull),
    ("batch_too_large", Rejection::BatchTooLarge),
];

/// Why the HTTP front refused a request before running it (see `access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An `Origin` that `--http.corsdomain` / `--ws.origins` does not allow (403).
    Origin = 0,
    /// A `Host` that `--http.vhosts` does not allow (403).
    Host = 1,
    /// A POST that is not `application/json` (415).
    ContentType = 2,
    /// On the Engine API port, a request without a valid JWT (401).
    Jwt = 3,
}

const REFUSALS: [(&str, Refusal); 4] = [
    ("origin", Refusal::Origin),
    ("host", Refusal::Host),
    ("content_type", Refusal::ContentType),
    ("jwt", Refusal::Jwt),
];

/// How many stripes: at least as many as RPC worker threads on any machine we run on.
const STRIPES: usize = 16;

#[derive(Debug, Default)]
struct MethodStats {
    requests: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    sum_micros: AtomicU64,
}

#[derive(Debug)]
struct Stripe {
    /// One per method of `RpcMetrics::names`, then `other`.
    methods: Box<[MethodStats]>,
    rejections: [AtomicU64; REJECTIONS.len()],
}

/// The RPC front's counters.
#[derive(Debug)]
pub struct RpcMetrics {
    /// The methods with counters of their own, sorted.
    names: &'static [&'static str],
    stripes: Box<[CachePadded<Stripe>]>,
    /// Refused requests by [`Refusal`]: rare, so one shared counter each.
    refusals: [AtomicU64; REFUSALS.len()],
    /// Requests whose method panicked (rare: one counter, not striped).
    panics: AtomicU64,
}

impl RpcMetrics {
    /// Counters for the methods `names` (sorted and unique: the method table's names), and
    /// one for every other method. `Default` gives the core methods' (`methods.rs`).
    pub(crate) fn for_methods(names: &'static [&'static str]) -> Self {
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]), "method names sorted and unique");
        let stripe = || {
            CachePadded::new(Stripe {
                methods: (0..=names.len()).map(|_| MethodStats::default()).collect(),
                rejections: Default::default(),
            })
        };
        Self {
            names,
            stripes: (0..STRIPES).map(|_| stripe()).collect(),
            refusals: Default::default(),
            panics: AtomicU64::new(0),
        }
    }

    /// This thread's stripe: threads are numbered on first use.
    fn stripe(&self) -> &Stripe {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static INDEX: usize = NEXT.fetch_add(1, Relaxed);
        }
        &self.stripes[INDEX.with(|i| *i) % STRIPES]
    }

    /// The counter slot of `method` (the core method's own, else `other`).
    pub(crate) fn slot_of(&self, method: &str) -> usize {
        self.names.binary_search(&method).unwrap_or(self.names.len())
    }

    /// Records one answered request.
    pub(crate) fn observe<T>(&self, method: &str, elapsed: Duration, result: &Result<T, RpcError>) {
        self.observe_slot(self.slot_of(method), elapsed, result);
    }

    /// Records one answered request of the method in counter slot `slot`.
    pub(crate) fn observe_slot<T>(
        &self,
        slot: usize,
        elapsed: Duration,
        result: &Result<T, RpcError>,
    ) {
        let stripe = self.stripe();
        let stats = &stripe.methods[slot.min(self.names.len())];
        stats.requests.fetch_add(1, Relaxed);
        let seconds = elapsed.as_secs_f64();
        if let Some(bucket) = BUCKETS.iter().position(|b| seconds <= *b) {
            stats.buckets[bucket].fetch_add(1, Relaxed);
        }
        stats.sum_micros.fetch_add(elapsed.as_micros() as u64, Relaxed);
        if let Err(error) = result {
            stats.errors.fetch_add(1, Relaxed);
            if let Some(path) = rejection_of(error) {
                self.reject(path);
            }
        }
    }

    /// Counts one request whose method panicked.
    pub(crate) fn count_panic(&self) {
        self.panics.fetch_add(1, Relaxed);
    }

    /// Requests whose method panicked so far.
    pub fn panics(&self) -> u64 {
        self.panics.load(Relaxed)
    }

    /// Counts one shed request.
    pub fn reject(&self, path: Rejection) {
        self.stripe().rejections[path as usize].fetch_add(1, Relaxed);
    }

    /// Requests shed on `path` so far.
    pub fn rejections(&self, path: Rejection) -> u64 {
        self.stripes.iter().map(|s| s.rejections[path as usize].load(Relaxed)).sum()
    }

    /// Counts one request refused for `reason`.
    pub fn refuse(&self, reason: Refusal) {
        self.refusals[reason as usize].fetch_add(1, Relaxed);
    }

    /// Requests refused for `reason` so far.
    pub fn refusals(&self, reason: Refusal) -> u64 {
        self.refusals[reason as usize].load(Relaxed)
    }

    /// Appends the request metrics in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let sum = |f: &dyn Fn(&Stripe) -> u64| self.stripes.iter().map(|s| f(s)).sum::<u64>();
        let name = |i: usize| self.names.get(i).copied().unwrap_or("other");
        let _ = writeln!(
            out,
            "# HELP hearth_rpc_requests_total JSON-RPC requests answered, by method."
        );
        let _ = writeln!(out, "# TYPE hearth_rpc_requests_total counter");
        let mut active = Vec::new();
        for i in 0..=self.names.len() {
            let requests = sum(&|s| s.methods[i].requests.load(Relaxed));
            if requests > 0 {
                active.push(i);
                let _ =
                    writeln!(out, "hearth_rpc_requests_total{{method=\"{}\"}} {requests}", name(i));
            }
        }
        let _ = writeln!(
            out,
            "# HELP hearth_rpc_errors_total JSON-RPC requests answered with an error, by method."
        );
        let _ = writeln!(out, "# TYPE hearth_rpc_errors_total counter");
        for &i in &active {
            let errors = sum(&|s| s.methods[i].errors.load(Relaxed));
            let _ = writeln!(out, "hearth_rpc_errors_total{{method=\"{}\"}} {errors}", name(i));
        }
        self.render_durations(out, &active);
        self.render_sheds(out);
    }

    /// The per-method latency histograms of the methods in `active`.
    fn render_durations(&self, out: &mut String, active: &[usize]) {
        let sum = |f: &dyn Fn(&Stripe) -> u64| self.stripes.iter().map(|s| f(s)).sum::<u64>();
        let name = |i: usize| self.names.get(i).copied().unwrap_or("other");
        let _ = writeln!(
            out,
            "# HELP hearth_rpc_request_duration_seconds Time to answer a request, by method."
        );
        let _ = writeln!(out, "# TYPE hearth_rpc_request_duration_seconds histogram");
        for &i in active {
            let mut cumulative = 0;
            for (b, bound) in BUCKETS.iter().enumerate() {
                cumulative += sum(&|s| s.methods[i].buckets[b].load(Relaxed));
                let _ = writeln!(
                    out,
                    "hearth_rpc_request_duration_seconds_bucket{{method=\"{}\",le=\"{bound}\"}} {cumulative}",
                    name(i)
                );
            }
            let count = sum(&|s| s.methods[i].requests.load(Relaxed));
            let micros = sum(&|s| s.methods[i].sum_micros.load(Relaxed));
            let _ = writeln!(
                out,
                "hearth_rpc_request_duration_seconds_bucket{{method=\"{}\",le=\"+Inf\"}} {count}",
                name(i)
            );
            let _ = writeln!(
                out,
                "hearth_rpc_request_duration_seconds_sum{{method=\"{}\"}} {}",
                name(i),
                micros as f64 / 1e6
            );
            let _ = writeln!(
                out,
                "hearth_rpc_request_duration_seconds_count{{method=\"{}\"}} {count}",
                name(i)
            );
        }
    }

    /// Requests shed (by path) and refused (by reason).
    fn render_sheds(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP hearth_rpc_rejections_total Requests shed instead of queued, by path."
        );
        let _ = writeln!(out, "# TYPE hearth_rpc_rejections_total counter");
        for (path, rejection) in REJECTIONS {
            let _ = writeln!(
                out,
                "hearth_rpc_rejections_total{{path=\"{path}\"}} {}",
                self.rejections(rejection)
            );
        }
        let _ = writeln!(
            out,
            "# HELP hearth_rpc_refused_total HTTP requests refused before running, by reason."
        );
        let _ = writeln!(out, "# TYPE hearth_rpc_refused_total counter");
        for (reason, refusal) in REFUSALS {
            let _ = writeln!(
                out,
                "hearth_rpc_refused_total{{reason=\"{reason}\"}} {}",
                self.refusals(refusal)
            );
        }
    }
}

/// The shedding path of an error, if it is a shed.
fn rejection_of(error: &RpcError) -> Option<Rejection> {
    use hearth_messages::{ExecError, TxError};
    match error {
        RpcError::Exec(ExecError::Busy { .. }) => Some(Rejection::ExecutorBusy),
        RpcError::Actor(error) if error.is_full() => Some(Rejection::MailboxFull),
        RpcError::Tx(TxError::PoolFull) => Some(Rejection::TxpoolFull),
        _ => None,
    }
}

/// Appends the WebSocket subscription gauges and counters.
pub(crate) fn subscription_metrics(
    out: &mut String,
    stats: &hearth_messages::subscriptions::SubscriptionStats,
) {
    gauge(out, "hearth_ws_connections", "WebSocket connections open now.", stats.connections);
    let _ = writeln!(out, "# HELP hearth_ws_subscriptions Subscriptions held now, by kind.");
    let _ = writeln!(out, "# TYPE hearth_ws_subscriptions gauge");
    for (kind, count) in [
        ("newHeads", stats.new_heads),
        ("logs", stats.logs),
        ("newPendingTransactions", stats.pending_txs),
        ("hearth_console", stats.console),
    ] {
        let _ = writeln!(out, "hearth_ws_subscriptions{{kind=\"{kind}\"}} {count}");
    }
    counter(
        out,
        "hearth_ws_notifications_total",
        "Subscription notifications queued for WebSocket connections.",
        stats.notifications,
    );
    counter(
        out,
        "hearth_ws_slow_subscribers_dropped_total",
        "WebSocket connections closed (1008) because their notification queue was full.",
        stats.slow_dropped,
    );
    counter(
        out,
        "hearth_ws_connections_refused_total",
        "WebSocket connections refused at --ws.max-connections.",
        stats.refused,
    );
}

/// Appends one gauge.
pub(crate) fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    let _ = writeln!(out, "{name} {value}");
}

/// Appends the actors' restart counters as one labelled counter.
pub(crate) fn restart_metrics(
    out: &mut String,
    restarts: &[(&'static str, hearth_messages::restarts::RestartCounter)],
    rpc_panics: u64,
) {
    let _ = writeln!(
        out,
        "# HELP hearth_actor_restarts_total Times an actor rebuilt its state after a handler panicked (rpc: requests whose method panicked)."
    );
    let _ = writeln!(out, "# TYPE hearth_actor_restarts_total counter");
    for (actor, counter) in restarts {
        let _ = writeln!(out, "hearth_actor_restarts_total{{actor=\"{actor}\"}} {}", counter.get());
    }
    let _ = writeln!(out, "hearth_actor_restarts_total{{actor=\"rpc\"}} {rpc_panics}");
}

/// Appends one counter.
pub(crate) fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    let _ = writeln!(out, "{name} {value}");
}

/// The calls the RPC workers ran themselves and the blocks the miner built on its own thread
/// (`--executor.inline-budget`), when there is an inline runner.
fn inline_metrics(out: &mut String, executor: &hearth_messages::executor::ExecutorClient) {
    if let Some([answered, handed_on]) = executor.inline_counts() {
        outcomes(
            out,
            "hearth_executor_inline_calls_total",
            "eth_calls tried on the RPC worker's thread (--executor.inline-budget): answered there, or handed on to the pool.",
            [("answered", answered), ("handed_on", handed_on)],
        );
    }
    if let Some([built, handed_back]) = executor.inline_block_counts() {
        outcomes(
            out,
            "hearth_executor_inline_blocks_total",
            "Blocks the miner had built: on its own thread (at most 1M gas, not a fork), or handed back to the executor pool.",
            [("built", built), ("handed_back", handed_back)],
        );
    }
}

/// Appends one counter split by `outcome`.
fn outcomes<const N: usize>(out: &mut String, name: &str, help: &str, counts: [(&str, u64); N]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    for (outcome, count) in counts {
        let _ = writeln!(out, "{name}{{outcome=\"{outcome}\"}} {count}");
    }
}

/// Appends the executor pool's admission figures: the limits, what is in the pool, the
/// refusals by reason, each thread's service time and the queue-delay histogram.
pub(crate) fn executor_metrics(
    out: &mut String,
    executor: &hearth_messages::executor::ExecutorClient,
) {
    use hearth_messages::admission::{QUEUE_DELAY_BUCKETS_MICROS, Refusal};

    let limits = executor.limits();
    gauge(
        out,
        "hearth_executor_in_flight",
        "Requests in the executor pool now, queued or running.",
        executor.in_flight(),
    );
    gauge(
        out,
        "hearth_executor_max_queue_delay_seconds",
        "Longest expected queueing delay a call is admitted with (--executor.max-queue-delay).",
        limits.max_queue_delay.as_secs_f64(),
    );
    gauge(
        out,
        "hearth_executor_max_queued",
        "Most requests waiting for an executor thread (--executor.max-queued).",
        limits.max_queued,
    );
    let _ = writeln!(
        out,
        "# HELP hearth_executor_refusals_total Calls the executor pool refused at admission, by reason."
    );
    let _ = writeln!(out, "# TYPE hearth_executor_refusals_total counter");
    for (reason, count) in Refusal::REASONS.iter().zip(executor.refusals()) {
        let _ = writeln!(out, "hearth_executor_refusals_total{{reason=\"{reason}\"}} {count}");
    }
    inline_metrics(out, executor);
    let _ = writeln!(
        out,
        "# HELP hearth_executor_service_time_seconds Moving average of one call's run time, per executor thread."
    );
    let _ = writeln!(out, "# TYPE hearth_executor_service_time_seconds gauge");
    for (lane, service) in executor.service_times().into_iter().enumerate() {
        let seconds = service.map_or(0.0, |s| s.as_secs_f64());
        let _ =
            writeln!(out, "hearth_executor_service_time_seconds{{thread=\"{lane}\"}} {seconds}");
    }
    let name = "hearth_executor_wait_scale";
    let _ = writeln!(
        out,
        "# HELP {name} Factor on each executor thread's expected wait, learned so that about 0.5% of its admitted calls end past the budget plus one service time."
    );
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (lane, scale) in executor.wait_scales().into_iter().enumerate() {
        let _ = writeln!(out, "{name}{{thread=\"{lane}\"}} {scale}");
    }
    let delays = executor.queue_delays();
    let name = "hearth_executor_queue_delay_seconds";
    let _ = writeln!(out, "# HELP {name} How long requests waited for an executor thread.");
    let _ = writeln!(out, "# TYPE {name} histogram");
    let mut cumulative = 0;
    for (bound, count) in QUEUE_DELAY_BUCKETS_MICROS.iter().zip(delays.buckets) {
        cumulative += count;
        let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {cumulative}", *bound as f64 / 1e6);
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", delays.count());
    let _ = writeln!(out, "{name}_sum {}", delays.sum.as_secs_f64());
    let _ = writeln!(out, "{name}_count {}", delays.count());
    call_stage_metrics(out, executor);
}

/// Appends where admitted calls' time went, one histogram series per stage (`Stage`): the
/// front before admission, the queue, the run, the pool (admission to answer), after the
/// answer, and the total in the handler. No sum: the buckets are what the tail needs.
fn call_stage_metrics(out: &mut String, executor: &hearth_messages::executor::ExecutorClient) {
    use hearth_messages::admission::{STAGE_BUCKETS_MICROS, Stage};

    let name = "hearth_executor_call_stage_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Where admitted HTTP calls' time went, by stage: front (body read to \
         admission), queue, run, pool (admission to answer), after (answer to reply), total."
    );
    let _ = writeln!(out, "# TYPE {name} histogram");
    let all = [Stage::Front, Stage::Queue, Stage::Run, Stage::Pool, Stage::After, Stage::Total];
    for stage in all {
        let label = Stage::LABELS[stage.index()];
        let buckets = executor.stage_buckets(stage);
        let mut cumulative = 0;
        for (bound, count) in STAGE_BUCKETS_MICROS.iter().zip(buckets) {
            cumulative += count;
            let le = *bound as f64 / 1e6;
            let _ = writeln!(out, "{name}_bucket{{stage=\"{label}\",le=\"{le}\"}} {cumulative}");
        }
        let count: u64 = buckets.iter().sum();
        let _ = writeln!(out, "{name}_bucket{{stage=\"{label}\",le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_count{{stage=\"{label}\"}} {count}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_across_threads_and_render() {
        let metrics = std::sync::Arc::new(RpcMetrics::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = std::sync::Arc::clone(&metrics);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        m.observe(
                            "eth_call",
                            Duration::from_micros(300),
                            &Ok(serde_json::Value::Null),
                        );
                    }
                    m.observe(
                        "nope_x",
                        Duration::from_millis(3),
                        &Err::<(), _>(RpcError::Exec(hearth_messages::ExecError::Busy(
                            hearth_messages::admission::Refusal::QueueFull { max_queued: 1 },
                        ))),
                    );
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let mut text = String::new();
        metrics.render(&mut text);
        assert!(text.contains("hearth_rpc_requests_total{method=\"eth_call\"} 400"), "{text}");
        assert!(text.contains("hearth_rpc_requests_total{method=\"other\"} 4"));
        assert!(text.contains("hearth_rpc_errors_total{method=\"other\"} 4"));
        assert!(text.contains("hearth_rpc_rejections_total{path=\"executor_busy\"} 4"));
        assert!(text.contains(
            "hearth_rpc_request_duration_seconds_bucket{method=\"eth_call\",le=\"0.0005\"} 400"
        ));
        assert!(text.contains(
            "hearth_rpc_request_duration_seconds_bucket{method=\"eth_call\",le=\"0.00025\"} 0"
        ));
    }
}
