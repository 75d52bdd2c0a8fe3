//! An experiment across kernels (`netbisect ab`): every configuration
//! (the product of the `--sweep` axes) measured on two kernels, `-n`
//! rounds, every configuration of a round inside one boot of each
//! kernel.
//!
//! - The kernels take turns in a drift-cancelling order: A B in odd
//!   rounds, B A in even ones (A B B A A B ...), so that a slow drift of
//!   the host falls on both alike.
//! - Within a boot the configurations run in an order drawn afresh for
//!   each round and kernel from the experiment's id, so that no
//!   configuration always runs first after a boot.
//! - The experiment's id is a hash of everything that defines it (the
//!   kernels' images by content, labels, configurations in the order of
//!   the axes as given, rounds, the VM options, testbed and commit, and
//!   the token of `--fresh`), and every run carries it with its round
//!   (`experiment` of the record) and the command that made it
//!   (`command`, from which its reproduce line is printed: see
//!   [`crate::request::command`]). Every part of the id comes from
//!   those words, so that the line, pasted, names the same experiment.
//!   Run again, the same command finds the runs it has and measures only
//!   the rest; `--fresh` starts a new experiment, named again by
//!   `--fresh=TOKEN`. Its printed comparison reads its own runs only.
//!
//! [`run`](mod@run) measures; [`progress`] tells how far it is.

pub mod lock;
mod progress;
mod run;

pub use run::run;

use crate::exit::{self, Context};
use crate::request::axes::Configuration;
use crate::vm::{GuestSubject, KernelUnderTest, VmOptions};
use serde::Serialize;

/// One kernel of an experiment.
pub struct Side {
    /// Its runs' label (`current`, `patched`).
    pub label: String,
    /// The kernel, checked.
    pub kernel: KernelUnderTest,
    /// blake3 of the image's bytes, which names the kernel in the id.
    pub image_hash: String,
}

impl Side {
    /// The side `label` of the kernel `kernel`, its image hashed.
    pub fn new(label: &str, kernel: KernelUnderTest) -> exit::Result<Side> {
        let bytes = std::fs::read(&kernel.image.path)
            .with_context(|| format!("cannot read {}", kernel.image.path.display()))?;
        Ok(Side {
            label: label.to_string(),
            image_hash: blake3::hash(&bytes).to_hex().to_string(),
            kernel,
        })
    }

    /// How the kernel is named in text: its release, else its file name.
    pub fn kernel_name(&self) -> String {
        self.kernel.image.release.clone().unwrap_or_else(|| {
            self.kernel
                .image
                .path
                .file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
        })
    }
}

/// An experiment, ready to run.
pub struct Experiment {
    /// The id its runs carry (16 hex digits).
    pub id: String,
    /// Kernel A and kernel B.
    pub sides: [Side; 2],
    /// The configurations, in the order of the axes.
    pub configurations: Vec<Configuration>,
    /// Rounds: boots of each kernel.
    pub rounds: u32,
    /// Commit and testbed of the runs (each side adds its label).
    pub subject: GuestSubject,
    /// The command its runs keep (`ab ...`, see
    /// [`crate::request::command`]).
    pub command: Vec<String>,
    /// Keep no run the kernel did not grant every setting of
    /// (`--strict-settings`): such a run is a failed configuration, to be
    /// measured again by the next run of the command. Not part of the id:
    /// it changes which runs are kept, not what they measure.
    pub strict_settings: bool,
}

/// One boot of an experiment: the round, and which side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boot {
    /// The round, from 1.
    pub round: u32,
    /// 0 for A, 1 for B.
    pub side_idx: usize,
}

/// What defines an experiment, hashed into its id.
#[derive(Serialize)]
struct Definition<'a> {
    kernels: Vec<(&'a str, &'a str)>,
    configurations: Vec<&'a run_record::spec::RunSpec>,
    rounds: u32,
    vm: &'a VmOptions,
    commit: Option<&'a str>,
    testbed: Option<&'a str>,
    fresh: Option<String>,
}

impl Experiment {
    /// The experiment of `sides` over `configurations`; the token of
    /// `fresh` makes it another than the same run without it (`--fresh`
    /// takes the time). `command` is what its runs keep: the words that
    /// give all of these again.
    pub fn new(
        sides: [Side; 2],
        configurations: Vec<Configuration>,
        rounds: u32,
        subject: GuestSubject,
        fresh: Option<String>,
        command: Vec<String>,
    ) -> exit::Result<Experiment> {
        let definition = Definition {
            kernels: sides
                .iter()
                .map(|side| (side.label.as_str(), side.image_hash.as_str()))
                .collect(),
            configurations: configurations.iter().map(|each| &each.spec).collect(),
            rounds,
            vm: &sides[0].kernel.options,
            commit: subject.commit.as_deref(),
            testbed: subject.testbed.as_deref(),
            // Today's token is what `--fresh` hashed before it had one.
            fresh,
        };
        let bytes = run_record::canonical::to_canonical_bytes(&definition)
            .context("failed to describe the experiment")?;
        let id = blake3::hash(&bytes).to_hex()[..16].to_string();
        Ok(Experiment {
            id,
            sides,
            configurations,
            rounds,
            subject,
            command,
            strict_settings: false,
        })
    }

    /// Every boot, in order: A B in odd rounds, B A in even ones.
    pub fn boots(&self) -> Vec<Boot> {
        (1..=self.rounds)
            .flat_map(|round| {
                let order = if round % 2 == 1 { [0, 1] } else { [1, 0] };
                order.map(|side_idx| Boot { round, side_idx })
            })
            .collect()
    }

    /// The order of the configurations in `boot`: a permutation drawn
    /// from the id, the round and the side (Fisher-Yates over blake3's
    /// output stream), the same whenever the experiment is run.
    pub fn order(&self, boot: Boot) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.configurations.len()).collect();
        let seed = format!("{}/{}/{}", self.id, boot.round, boot.side_idx);
        let mut stream = blake3::Hasher::new().update(seed.as_bytes()).finalize_xof();
        for idx in (1..order.len()).rev() {
            let mut bytes = [0u8; 8];
            stream.fill(&mut bytes);
            let pick = (u64::from_le_bytes(bytes) % (idx as u64 + 1)) as usize;
            order.swap(idx, pick);
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::{KernelImage, VmOptions};
    use run_record::spec::{RunSpec, TestKind};

    fn experiment(n_configurations: u32, rounds: u32) -> Experiment {
        let side = |label: &str| Side {
            label: label.to_string(),
            kernel: KernelUnderTest {
                image: KernelImage::for_tests(label),
                options: VmOptions::default(),
            },
            image_hash: format!("{label}-hash"),
        };
        let configurations = (1..=n_configurations)
            .map(|size| {
                let mut spec = RunSpec::defaults(TestKind::TcpStream);
                spec.send_size_bytes = size;
                Configuration {
                    spec,
                    name: vec![format!("m={size}")],
                }
            })
            .collect();
        Experiment::new(
            [side("a"), side("b")],
            configurations,
            rounds,
            GuestSubject::default(),
            None,
            Vec::new(),
        )
        .unwrap()
    }

    #[test]
    fn kernels_take_turns_a_b_b_a() {
        let sides: Vec<(u32, usize)> = experiment(2, 3)
            .boots()
            .iter()
            .map(|boot| (boot.round, boot.side_idx))
            .collect();
        assert_eq!(sides, [(1, 0), (1, 1), (2, 1), (2, 0), (3, 0), (3, 1)]);
    }

    #[test]
    fn the_order_of_configurations_changes_between_boots_and_repeats_on_resume() {
        let experiment = experiment(8, 4);
        let orders: Vec<Vec<usize>> = experiment
            .boots()
            .iter()
            .map(|&boot| experiment.order(boot))
            .collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        }
        assert!(orders.windows(2).any(|pair| pair[0] != pair[1]));
        assert_eq!(experiment.order(experiment.boots()[3]), orders[3]);
    }

    /// Ids are pinned: an experiment run again after an upgrade finds
    /// the runs it archived before (the definition hashed is the one
    /// netbisect hashed before its runs kept their command).
    #[test]
    fn ids_stay_as_they_were() {
        assert_eq!(experiment(2, 2).id, PINNED_ID);
    }

    const PINNED_ID: &str = "05e5a94ecfed1441";

    #[test]
    fn the_id_names_what_defines_the_experiment() {
        let a = experiment(2, 2);
        assert_eq!(a.id, experiment(2, 2).id);
        assert_eq!(a.id.len(), 16);
        assert_ne!(a.id, experiment(2, 3).id);
        assert_ne!(a.id, experiment(3, 2).id);
    }
}
