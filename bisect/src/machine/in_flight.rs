//! The measurements a machine asked for that are not fed yet: with
//! several measured at once, each slot's commit until its sample comes
//! back.

use super::Target;
use std::collections::BTreeMap;

/// Measurements asked for and not fed yet, by target, with their count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct InFlight {
    counts: BTreeMap<Target, usize>,
}

impl InFlight {
    /// One more measurement of `target` started.
    pub(crate) fn add(&mut self, target: Target) {
        *self.counts.entry(target).or_default() += 1;
    }

    /// One measurement of `target` came back; false when none was in
    /// flight.
    pub(crate) fn remove(&mut self, target: Target) -> bool {
        match self.counts.get_mut(&target) {
            Some(count) if *count > 1 => {
                *count -= 1;
                true
            }
            Some(_) => {
                self.counts.remove(&target);
                true
            }
            None => false,
        }
    }

    /// Measurements of `target` in flight.
    pub(crate) fn count(&self, target: Target) -> usize {
        self.counts.get(&target).copied().unwrap_or(0)
    }

    /// Nothing is in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The commits of the range in flight, each as often as it is.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.counts
            .iter()
            .flat_map(|(target, &count)| match target {
                Target::Node(node_idx) => std::iter::repeat_n(*node_idx, count),
                Target::Good => std::iter::repeat_n(0, 0),
            })
    }
}
