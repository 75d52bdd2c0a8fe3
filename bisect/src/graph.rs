//! The commit graph of a bisection range, independent of git: the commits
//! reachable from the bad end and not from the good end, with their
//! parent links inside the range, and the walk over it that `git bisect`
//! does.
//!
//! Choice of the next commit follows git (`find_bisection` in git's
//! `bisect.c`): for every candidate, count its ancestors among the
//! candidates (itself included), `weight`; the best commit maximises
//! `min(weight, n - weight)`, so that either answer removes about half the
//! candidates. Ties go to the candidate listed first, newest first as
//! `git rev-list` lists them. Skipped commits are never chosen; when the
//! best one is skipped the next best is taken, which is a commit near the
//! midpoint. When only skipped commits and the bad end remain, the
//! culprit is one of them and the bisection ends with that range, as git
//! does.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A commit as the report names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitInfo {
    /// Full commit id (hex).
    pub id: String,
    /// First line of the message.
    pub subject: String,
    /// Author, `Name <email>`.
    pub author: String,
    /// Author date, RFC 3339.
    pub date: String,
}

impl CommitInfo {
    /// A commit known only by its id (simulations, tests).
    pub fn bare(id: impl Into<String>) -> CommitInfo {
        CommitInfo {
            id: id.into(),
            subject: String::new(),
            author: String::new(),
            date: String::new(),
        }
    }
}

/// One commit of the range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What the commit is.
    pub info: CommitInfo,
    /// Indices of its parents inside the range, first parent first.
    /// Parents outside the range are ancestors of the good end.
    pub parents: Vec<usize>,
}

/// The range: nodes in topological order, parents before children, so
/// the last node is the bad end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitGraph {
    /// The good end (outside the range).
    pub good: CommitInfo,
    /// The commits of the range, oldest first; the bad end is last.
    pub nodes: Vec<Node>,
    /// True when only first parents were followed.
    pub first_parent: bool,
}

/// Why a graph cannot be bisected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GraphError {
    /// The range holds no commit.
    #[error("the range is empty: the bad commit is an ancestor of the good commit")]
    Empty,
    /// A parent link points forward or outside the node list.
    #[error("commit {0} has a parent that is not listed before it")]
    NotTopological(String),
}

impl CommitGraph {
    /// Checks that the graph is non-empty and topologically ordered.
    pub fn validate(&self) -> Result<(), GraphError> {
        if self.nodes.is_empty() {
            return Err(GraphError::Empty);
        }
        for (node_idx, node) in self.nodes.iter().enumerate() {
            if node.parents.iter().any(|&parent| parent >= node_idx) {
                return Err(GraphError::NotTopological(node.info.id.clone()));
            }
        }
        Ok(())
    }

    /// A straight line of `n_commits` commits named `c0`, `c1`, ...
    /// after a good commit named `good` (simulations, tests).
    pub fn linear(n_commits: usize) -> CommitGraph {
        let nodes = (0..n_commits)
            .map(|node_idx| Node {
                info: CommitInfo::bare(format!("c{node_idx}")),
                parents: if node_idx == 0 {
                    Vec::new()
                } else {
                    vec![node_idx - 1]
                },
            })
            .collect();
        CommitGraph {
            good: CommitInfo::bare("good"),
            nodes,
            first_parent: false,
        }
    }

    /// Index of the bad end.
    pub fn bad_idx(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }

    /// Index of the node with commit id `id`.
    pub fn find(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node.info.id == id)
    }

    /// Ancestors of `start` inside the range (itself included), as a
    /// membership vector.
    fn ancestors(&self, start: usize, into: &mut [bool]) {
        let mut stack = vec![start];
        while let Some(node_idx) = stack.pop() {
            if into[node_idx] {
                continue;
            }
            into[node_idx] = true;
            stack.extend(self.nodes[node_idx].parents.iter().copied());
        }
    }

    /// The commits that may still be the first new one: ancestors of
    /// `bad` that are not ancestors of any of `olds`, in node order.
    pub fn candidates(&self, bad: usize, olds: &[usize]) -> Vec<usize> {
        let mut of_bad = vec![false; self.nodes.len()];
        self.ancestors(bad, &mut of_bad);
        let mut of_old = vec![false; self.nodes.len()];
        for &old in olds {
            if !of_old[old] {
                self.ancestors(old, &mut of_old);
            }
        }
        (0..self.nodes.len())
            .filter(|&node_idx| of_bad[node_idx] && !of_old[node_idx])
            .collect()
    }

    /// For each candidate, the number of candidates among its ancestors
    /// (itself included). `candidates` must be in node order.
    pub fn weights(&self, candidates: &[usize]) -> Vec<usize> {
        let n_candidates = candidates.len();
        let mut position = vec![usize::MAX; self.nodes.len()];
        for (pos, &node_idx) in candidates.iter().enumerate() {
            position[node_idx] = pos;
        }
        let parents_in = |pos: usize| {
            self.nodes[candidates[pos]]
                .parents
                .iter()
                .filter_map(|&parent| match position[parent] {
                    usize::MAX => None,
                    parent_pos => Some(parent_pos),
                })
        };
        // A straight line, the common case, needs no sets: the weight is
        // the position.
        let is_line = (0..n_candidates).all(|pos| {
            let mut parents = parents_in(pos);
            match (parents.next(), parents.next()) {
                (None, None) => pos == 0,
                (Some(parent_pos), None) => parent_pos + 1 == pos,
                _ => false,
            }
        });
        if is_line {
            return (1..=n_candidates).collect();
        }
        let n_words = n_candidates.div_ceil(64);
        let mut sets = vec![0u64; n_words * n_candidates];
        let mut weights = Vec::with_capacity(n_candidates);
        for pos in 0..n_candidates {
            let (before, rest) = sets.split_at_mut(pos * n_words);
            let own = &mut rest[..n_words];
            own[pos / 64] |= 1 << (pos % 64);
            for parent_pos in parents_in(pos) {
                let parent_set = &before[parent_pos * n_words..(parent_pos + 1) * n_words];
                for (word, parent_word) in own.iter_mut().zip(parent_set) {
                    *word |= parent_word;
                }
            }
            weights.push(own.iter().map(|word| word.count_ones() as usize).sum());
        }
        weights
    }

    /// The next commit to test among `candidates` (in node order, the bad
    /// end last), never one in `skipped` nor `bad`; `None` when every
    /// candidate but the bad end is skipped.
    pub fn next_commit(
        &self,
        candidates: &[usize],
        bad: usize,
        skipped: &BTreeSet<usize>,
    ) -> Option<usize> {
        let n_candidates = candidates.len();
        let weights = self.weights(candidates);
        // Newest first, as rev-list lists them, so ties go the way git's do.
        let mut best: Option<(usize, usize)> = None;
        for pos in (0..n_candidates).rev() {
            let node_idx = candidates[pos];
            if node_idx == bad || skipped.contains(&node_idx) {
                continue;
            }
            let score = weights[pos].min(n_candidates - weights[pos]);
            if best.is_none_or(|(best_score, _)| score > best_score) {
                best = Some((score, node_idx));
            }
        }
        best.map(|(_, node_idx)| node_idx)
    }
}

/// Roughly how many more steps a range of `n_candidates` takes (log2).
pub fn steps_left(n_candidates: usize) -> u32 {
    if n_candidates <= 1 {
        0
    } else {
        usize::BITS - (n_candidates - 1).leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diamond() -> CommitGraph {
        // 0 - 1 - 2 ----- 5 (merge of 2 and 4) - 6
        //      \         /
        //       3 ----- 4
        let parents: [&[usize]; 7] = [&[], &[0], &[1], &[1], &[3], &[2, 4], &[5]];
        CommitGraph {
            good: CommitInfo::bare("g"),
            nodes: parents
                .iter()
                .enumerate()
                .map(|(node_idx, parents)| Node {
                    info: CommitInfo::bare(format!("n{node_idx}")),
                    parents: parents.to_vec(),
                })
                .collect(),
            first_parent: false,
        }
    }

    #[test]
    fn linear_midpoint_is_half_way() {
        let graph = CommitGraph::linear(16);
        let candidates = graph.candidates(15, &[]);
        assert_eq!(candidates.len(), 16);
        let next = graph
            .next_commit(&candidates, 15, &BTreeSet::new())
            .unwrap();
        assert_eq!(next, 7);
        let after_old = graph.candidates(15, &[7]);
        assert_eq!(after_old, (8..16).collect::<Vec<_>>());
    }

    #[test]
    fn merge_weights_count_both_sides() {
        let graph = diamond();
        let candidates = graph.candidates(6, &[]);
        assert_eq!(graph.weights(&candidates), vec![1, 2, 3, 3, 4, 6, 7]);
        // min(w, 7 - w): n2 -> 3, n3 -> 3, n4 -> 3; newest first wins: n4.
        assert_eq!(graph.next_commit(&candidates, 6, &BTreeSet::new()), Some(4));
        // n4 old removes 0, 1, 3, 4; n2 stays.
        assert_eq!(graph.candidates(6, &[4]), vec![2, 5, 6]);
    }

    #[test]
    fn commits_given_up_are_stepped_around() {
        let graph = CommitGraph::linear(8);
        let candidates = graph.candidates(7, &[]);
        let skipped: BTreeSet<usize> = [3].into();
        let next = graph.next_commit(&candidates, 7, &skipped).unwrap();
        assert!(next == 2 || next == 4, "{next}");
        let all: BTreeSet<usize> = (0..7).collect();
        assert_eq!(graph.next_commit(&candidates, 7, &all), None);
    }

    #[test]
    fn steps_left_is_log2() {
        assert_eq!(steps_left(1), 0);
        assert_eq!(steps_left(2), 1);
        assert_eq!(steps_left(1024), 10);
        assert_eq!(steps_left(1025), 11);
    }
}
