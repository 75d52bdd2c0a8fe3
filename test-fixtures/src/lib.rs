//! What the tests of every crate build the same way: run records
//! ([`record::RecordBuilder`], [`record::sampled_run`]), samples scattered
//! the same way on every machine ([`noise::Noise`]), git repositories with
//! a fixed author and time ([`git::GitRepo`]), a PostgreSQL server of
//! their own ([`postgres::Cluster`]), and the one way a test gives up
//! where it cannot run ([`skip::skip`], a failure under
//! `NETBISECT_SLOW_TESTS=1`). A dev-dependency only: no production code
//! links it.
//!
//! ```
//! use test_fixtures::record::RecordBuilder;
//! use run_record::spec::TestKind;
//!
//! let record = RecordBuilder::new(TestKind::TcpRr)
//!     .commit("abcdef")
//!     .samples(&[40_000.0, 41_000.0])
//!     .build();
//! assert_eq!(record.iterations.len(), 2);
//! assert_eq!(record.id, record.compute_id().unwrap());
//! ```
//!
//! The crate that defines the record cannot use this one in its own unit
//! tests: a dev-dependency back on it would link a second copy of the
//! record types there.

#![deny(missing_docs)]

pub mod git;
pub mod noise;
pub mod postgres;
pub mod record;
pub mod skip;
