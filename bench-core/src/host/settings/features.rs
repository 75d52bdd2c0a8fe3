//! Offload names to the kernel's feature bits, as `ethtool -K` maps them,
//! and the one `ETHTOOL_SFEATURES` request that sets every feature asked.
//!
//! A short name covers the features its pattern matches among the
//! kernel's feature names (the `ETH_SS_FEATURES` string set, one name per
//! bit): `sg` is `tx-scatter-gather*`, `tx` is `tx-checksum-*`, `tso` is
//! `tx-tcp*-segmentation`, and so on ([`SHORT_NAMES`], ethtool's own
//! table). Any other name is a kernel feature name, taken as it is.
//!
//! As ethtool does, a request changes only the features of a name that
//! the driver lets be changed (available and not "never changed"); the
//! others keep their state. A device "has" a feature it may change or
//! that is on; a name none of whose features the device has is unknown to
//! it, and one whose features it has but may not change is fixed.

use super::super::ethtool::{FeatureState, bit_is_set, set_bit};
use std::collections::BTreeMap;

/// The short names of `ethtool -K` and the kernel feature names each
/// covers, as a pattern with at most one `*` (ethtool's `off_flag_def`).
pub const SHORT_NAMES: [(&str, &str); 8] = [
    ("rx", "rx-checksum"),
    ("tx", "tx-checksum-*"),
    ("sg", "tx-scatter-gather*"),
    ("tso", "tx-tcp*-segmentation"),
    ("ufo", "tx-udp-fragmentation"),
    ("gso", "tx-generic-segmentation"),
    ("gro", "rx-gro"),
    ("lro", "rx-lro"),
];

/// The pattern of kernel feature names that `name` covers: the pattern of
/// a short name, else the name itself.
pub fn kernel_pattern(name: &str) -> &str {
    SHORT_NAMES
        .iter()
        .find(|(short, _)| *short == name)
        .map_or(name, |(_, pattern)| pattern)
}

/// True when kernel feature name `feature` matches `pattern`, in which a
/// `*` stands for any run of characters.
pub fn pattern_matches(pattern: &str, feature: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == feature,
        Some((head, tail)) => {
            feature.len() >= head.len() + tail.len()
                && feature.starts_with(head)
                && feature.ends_with(tail)
        }
    }
}

/// The bits of the kernel features `name` covers, in bit order; empty
/// when the kernel has none of that name.
pub fn feature_bits(name: &str, kernel_names: &[String]) -> Vec<usize> {
    let pattern = kernel_pattern(name);
    kernel_names
        .iter()
        .enumerate()
        .filter(|(_, feature)| !feature.is_empty() && pattern_matches(pattern, feature))
        .map(|(bit_idx, _)| bit_idx)
        .collect()
}

/// The `ETHTOOL_SFEATURES` request for every feature asked, and the bits
/// of each name the device has, to read back what was granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FeaturePlan {
    /// The bits the request changes.
    pub(super) valid: Vec<u32>,
    /// The state asked of those bits.
    pub(super) requested: Vec<u32>,
    /// By name asked, the bits the device has.
    pub(super) members: BTreeMap<String, Vec<usize>>,
}

/// Why a feature cannot be asked of a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum FeatureProblem {
    /// The device has no feature of this name.
    Unknown {
        /// The name asked.
        name: String,
    },
    /// The device has it, but its driver does not let it change.
    Fixed {
        /// The name asked.
        name: String,
        /// Its state, which stays.
        on: bool,
    },
    /// Two names asked cover the same feature, one on and one off.
    Clash {
        /// The first name, in name order.
        first: String,
        /// The second.
        second: String,
        /// The kernel feature both cover.
        feature: String,
    },
}

/// The request that sets every feature of `asked` (name, on) on a device
/// in `state`, or why one of them cannot be set.
pub(super) fn plan(
    asked: &BTreeMap<String, bool>,
    state: &FeatureState,
) -> Result<FeaturePlan, FeatureProblem> {
    let n_words = state.active.len();
    let mut valid = vec![0u32; n_words];
    let mut requested = state.requested.clone();
    requested.resize(n_words, 0);
    let mut members = BTreeMap::new();
    // Which name asked for each bit, and how, to find a clash.
    let mut asked_by: BTreeMap<usize, (&str, bool)> = BTreeMap::new();
    for (name, &on) in asked {
        let has: Vec<usize> = feature_bits(name, &state.names)
            .into_iter()
            .filter(|&bit_idx| device_has(state, bit_idx))
            .collect();
        if has.is_empty() {
            return Err(FeatureProblem::Unknown { name: name.clone() });
        }
        let changeable: Vec<usize> = has
            .iter()
            .copied()
            .filter(|&bit_idx| {
                bit_is_set(&state.available, bit_idx) && !bit_is_set(&state.never_changed, bit_idx)
            })
            .collect();
        if changeable.is_empty() {
            return Err(FeatureProblem::Fixed {
                name: name.clone(),
                on: all_active(&has, &state.active),
            });
        }
        for &bit_idx in &changeable {
            if let Some(&(first, first_on)) = asked_by.get(&bit_idx)
                && first_on != on
            {
                return Err(FeatureProblem::Clash {
                    first: first.to_string(),
                    second: name.clone(),
                    feature: state.names[bit_idx].clone(),
                });
            }
            asked_by.insert(bit_idx, (name, on));
            set_bit(&mut valid, bit_idx, true);
            set_bit(&mut requested, bit_idx, on);
        }
        members.insert(name.clone(), has);
    }
    Ok(FeaturePlan {
        valid,
        requested,
        members,
    })
}

/// Whether a name is on, given the bits of it the device has: on when
/// every one of them is active.
pub(super) fn granted(members: &[usize], state: &FeatureState) -> bool {
    all_active(members, &state.active)
}

fn all_active(bits: &[usize], active: &[u32]) -> bool {
    !bits.is_empty() && bits.iter().all(|&bit_idx| bit_is_set(active, bit_idx))
}

/// A device has a feature it may change or that is on.
fn device_has(state: &FeatureState, bit_idx: usize) -> bool {
    bit_is_set(&state.available, bit_idx) || bit_is_set(&state.active, bit_idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel feature names of a 6.x kernel, in an order of our own.
    const KERNEL_NAMES: &[&str] = &[
        "tx-scatter-gather",
        "tx-checksum-ipv4",
        "tx-checksum-ip-generic",
        "tx-checksum-ipv6",
        "highdma",
        "tx-scatter-gather-fraglist",
        "tx-vlan-hw-insert",
        "rx-vlan-hw-parse",
        "tx-generic-segmentation",
        "rx-gro",
        "rx-lro",
        "tx-tcp-segmentation",
        "tx-gso-robust",
        "tx-tcp-ecn-segmentation",
        "tx-tcp-mangleid-segmentation",
        "tx-tcp6-segmentation",
        "tx-udp-segmentation",
        "rx-checksum",
        "tx-checksum-sctp",
        "rx-gro-hw",
        "rx-gro-list",
        "tx-checksum-fcoe-crc",
        "",
        "loopback",
    ];

    fn names() -> Vec<String> {
        KERNEL_NAMES.iter().map(|name| name.to_string()).collect()
    }

    fn covered(name: &str) -> Vec<&'static str> {
        feature_bits(name, &names())
            .into_iter()
            .map(|bit_idx| KERNEL_NAMES[bit_idx])
            .collect()
    }

    #[test]
    fn short_names_cover_what_ethtool_covers() {
        assert_eq!(
            covered("sg"),
            ["tx-scatter-gather", "tx-scatter-gather-fraglist"]
        );
        assert_eq!(
            covered("tx"),
            [
                "tx-checksum-ipv4",
                "tx-checksum-ip-generic",
                "tx-checksum-ipv6",
                "tx-checksum-sctp",
                "tx-checksum-fcoe-crc"
            ]
        );
        assert_eq!(covered("rx"), ["rx-checksum"]);
        assert_eq!(
            covered("tso"),
            [
                "tx-tcp-segmentation",
                "tx-tcp-ecn-segmentation",
                "tx-tcp-mangleid-segmentation",
                "tx-tcp6-segmentation"
            ]
        );
        assert_eq!(covered("gso"), ["tx-generic-segmentation"]);
        // gro is rx-gro alone, not the hardware or list variants.
        assert_eq!(covered("gro"), ["rx-gro"]);
        assert_eq!(covered("lro"), ["rx-lro"]);
        // Kernels since 4.16 have no UDP fragmentation offload.
        assert!(covered("ufo").is_empty());
        // Every short name of the record's list has a pattern here.
        for short in run_record::spec::OFFLOAD_NAMES {
            assert_ne!(kernel_pattern(short), *short, "{short}");
        }
    }

    #[test]
    fn kernel_names_are_taken_as_they_are() {
        assert_eq!(covered("tx-udp-segmentation"), ["tx-udp-segmentation"]);
        assert_eq!(covered("rx-gro-hw"), ["rx-gro-hw"]);
        assert!(covered("tx-foo").is_empty());
        // A pattern is only a short name's; a name with a star is a name.
        assert!(covered("tx-checksum-*-x").is_empty());
        assert!(covered("").is_empty());
    }

    #[test]
    fn patterns_match_with_one_star() {
        assert!(pattern_matches(
            "tx-tcp*-segmentation",
            "tx-tcp-segmentation"
        ));
        assert!(pattern_matches(
            "tx-tcp*-segmentation",
            "tx-tcp6-segmentation"
        ));
        assert!(!pattern_matches(
            "tx-tcp*-segmentation",
            "tx-udp-segmentation"
        ));
        // Head and tail may not overlap.
        assert!(!pattern_matches("ab*ba", "aba"));
        assert!(pattern_matches("ab*ba", "abba"));
        assert!(pattern_matches("rx-gro", "rx-gro"));
        assert!(!pattern_matches("rx-gro", "rx-gro-hw"));
    }

    /// A device state over [`KERNEL_NAMES`]: `available` bits may change,
    /// `active` bits are on, `never` bits never change.
    fn state(available: &[&str], active: &[&str], never: &[&str]) -> FeatureState {
        let words = |set: &[&str]| {
            let mut words = vec![0u32; 1];
            for name in set {
                let bit_idx = KERNEL_NAMES.iter().position(|n| n == name).unwrap();
                set_bit(&mut words, bit_idx, true);
            }
            words
        };
        FeatureState {
            names: names(),
            available: words(available),
            requested: words(active),
            active: words(active),
            never_changed: words(never),
        }
    }

    fn asked(pairs: &[(&str, bool)]) -> BTreeMap<String, bool> {
        pairs
            .iter()
            .map(|(name, on)| (name.to_string(), *on))
            .collect()
    }

    /// A veth-like device: checksums by ip-generic, SG, TSO and GSO on
    /// and changeable, GRO off and changeable, loopback fixed off.
    fn veth() -> FeatureState {
        let changeable = [
            "tx-checksum-ip-generic",
            "tx-checksum-sctp",
            "tx-scatter-gather",
            "tx-scatter-gather-fraglist",
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
            "tx-generic-segmentation",
            "rx-gro",
            "rx-checksum",
        ];
        let on: Vec<&str> = changeable
            .iter()
            .copied()
            .filter(|name| *name != "rx-gro")
            .chain(["highdma"])
            .collect();
        state(&changeable, &on, &["loopback"])
    }

    #[test]
    fn a_plan_sets_the_changeable_bits_asked_and_nothing_else() {
        let device = veth();
        let plan = plan(
            &asked(&[("gso", false), ("gro", true), ("tx", false)]),
            &device,
        )
        .unwrap();
        let bit = |name: &str| KERNEL_NAMES.iter().position(|n| *n == name).unwrap();
        for (name, on) in [
            ("tx-generic-segmentation", false),
            ("rx-gro", true),
            ("tx-checksum-ip-generic", false),
            ("tx-checksum-sctp", false),
        ] {
            assert!(bit_is_set(&plan.valid, bit(name)), "{name}");
            assert_eq!(bit_is_set(&plan.requested, bit(name)), on, "{name}");
        }
        // The checksum features the device has not are left alone.
        assert!(!bit_is_set(&plan.valid, bit("tx-checksum-ipv4")));
        assert!(!bit_is_set(&plan.valid, bit("highdma")));
        assert_eq!(
            plan.members["tx"],
            [bit("tx-checksum-ip-generic"), bit("tx-checksum-sctp")]
        );
        // Before anything is set, what the device has is read as granted
        // on when every one of a name's features is on.
        assert!(granted(&plan.members["tx"], &device));
        assert!(!granted(&plan.members["gro"], &device));
    }

    #[test]
    fn unknown_fixed_and_clashing_features_are_named() {
        let device = veth();
        assert_eq!(
            plan(&asked(&[("tx-foo", true)]), &device),
            Err(FeatureProblem::Unknown {
                name: "tx-foo".into()
            })
        );
        // The kernel knows rx-lro, but this device has it neither on nor
        // changeable.
        assert_eq!(
            plan(&asked(&[("lro", true)]), &device),
            Err(FeatureProblem::Unknown { name: "lro".into() })
        );
        // Loopback's SG is on for good.
        let loopback = state(
            &["tx-generic-segmentation"],
            &["tx-scatter-gather", "tx-generic-segmentation", "loopback"],
            &["loopback"],
        );
        assert_eq!(
            plan(&asked(&[("sg", false)]), &loopback),
            Err(FeatureProblem::Fixed {
                name: "sg".into(),
                on: true
            })
        );
        assert_eq!(
            plan(&asked(&[("loopback", false)]), &loopback),
            Err(FeatureProblem::Fixed {
                name: "loopback".into(),
                on: true
            })
        );
        assert_eq!(
            plan(
                &asked(&[("sg", false), ("tx-scatter-gather", true)]),
                &device
            ),
            Err(FeatureProblem::Clash {
                first: "sg".into(),
                second: "tx-scatter-gather".into(),
                feature: "tx-scatter-gather".into(),
            })
        );
        // The same state asked twice is no clash.
        assert!(
            plan(
                &asked(&[("sg", false), ("tx-scatter-gather", false)]),
                &device
            )
            .is_ok()
        );
    }
}
