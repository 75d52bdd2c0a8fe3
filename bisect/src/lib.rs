//! bisect: statistical, resumable bisection of a git range.
