//! What a `metrics_util` `DebuggingRecorder` holds, read by name and
//! labels: shared by `tests/metrics.rs` and `tests/metrics_redis.rs`.
#![allow(dead_code)]

use metrics_util::debugging::{DebugValue, Snapshotter};
use metrics_util::MetricKind;

/// One snapshot. Taking it resets the recorder: counters and gauges start
/// again from zero, histograms drop their samples; take one per check.
pub(crate) struct Recorded(Vec<Metric>);

/// A metric's kind, name, labels (key, value) and value.
type Metric = (MetricKind, String, Vec<(String, String)>, DebugValue);

impl Recorded {
    pub(crate) fn take(snapshotter: &Snapshotter) -> Recorded {
        Recorded(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| {
                    let (kind, key) = key.into_parts();
                    let labels = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    (kind, key.name().to_owned(), labels, value)
                })
                .collect(),
        )
    }

    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(_, n, l, _)| {
                n == name
                    && l.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, _, _, value)| value)
    }

    /// The counter `name` with exactly `labels`; `None` if never registered.
    pub(crate) fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        match self.find(name, labels)? {
            DebugValue::Counter(n) => Some(*n),
            other => panic!("{name} is not a counter: {other:?}"),
        }
    }

    /// The gauge `name` with exactly `labels`.
    pub(crate) fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.find(name, labels)? {
            DebugValue::Gauge(x) => Some(x.into_inner()),
            other => panic!("{name} is not a gauge: {other:?}"),
        }
    }

    /// The samples of histogram `name` with exactly `labels` since the last
    /// snapshot.
    pub(crate) fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Option<Vec<f64>> {
        match self.find(name, labels)? {
            DebugValue::Histogram(xs) => Some(xs.iter().map(|x| x.into_inner()).collect()),
            other => panic!("{name} is not a histogram: {other:?}"),
        }
    }

    /// Every metric name with `labels` among its labels, sorted.
    pub(crate) fn names_with(&self, label: (&str, &str)) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .iter()
            .filter(|(_, _, l, _)| l.iter().any(|(k, v)| k == label.0 && v == label.1))
            .map(|(_, n, _, _)| n.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}
