//! The algorithm of each operation, declared as component parameters
//! (`SHMEM_MCA_scoll_basic_<name>`, or `[mca.scoll.basic]` in a configuration file). The core
//! checks their kinds at init and that every PE has the same values (members that chose
//! different algorithms would wait for each other forever); this module checks the names of
//! the choices and ends the job naming the variable when one is unknown. `shmem_info` lists
//! the parameters with their values and origins.
//!
//! The table `auto` applies (docs/architecture.md, "Collectives"):
//! - broadcast: the binomial tree at every size and team size (ceil(log2 n) levels, no
//!   handshake with the root); `linear` makes the root wait for every member and put to each.
//! - fcollect: Bruck's concatenation (ceil(log2 n) rounds, no barrier) at every size and
//!   team size; `linear` puts every block to every member between two barriers. collect
//!   (blocks of different sizes) is always linear.
//! - reductions to all: a split (reduce-scatter, then allgather) from `reduce_split_min`
//!   bytes up (4 times that on teams of 2); below it a tree (partials up a binomial tree to
//!   member 0, the result down another), or on teams of 2 the linear form, where every member
//!   reads every source whole. Scans are always linear. The linear and split forms combine the sources of
//!   each element in team order, so they give the same bits; the tree combines in its own
//!   order (the same on every member).

use rshmem_plugin_api::values::parse_size;
use rshmem_plugin_api::{cstr, CoreServices, ParamDecl, LOG_DEBUG, PARAM_SIZE, PARAM_STRING};
use std::sync::OnceLock;

/// The declarations, in the descriptor.
pub const PARAMS: &[ParamDecl] = &[
    ParamDecl {
        name: cstr!("bcast_algorithm"),
        kind: PARAM_STRING,
        default_value: cstr!("auto"),
        doc: cstr!("Broadcast: auto (binomial), binomial (log2 n levels, each member passing the data on to its children) or linear (the root waits for every member, then puts to each)"),
    },
    ParamDecl {
        name: cstr!("fcollect_algorithm"),
        kind: PARAM_STRING,
        default_value: cstr!("auto"),
        doc: cstr!("fcollect: auto (bruck), bruck (log2 n rounds, each member passing on the blocks it has to the member 2^k ahead) or linear (every member puts its block to every member, between two barriers); collect is always linear"),
    },
    ParamDecl {
        name: cstr!("reduce_algorithm"),
        kind: PARAM_STRING,
        default_value: cstr!("auto"),
        doc: cstr!("Reductions to all: auto (split from reduce_split_min bytes, 4 times that on teams of 2; below it tree, or linear on teams of 2), tree (partials up a binomial tree to member 0, the result down one), split (each member reduces one chunk of every source, then puts it to all) or linear (each member reads every source whole); scans are always linear"),
    },
    ParamDecl {
        name: cstr!("reduce_split_min"),
        kind: PARAM_SIZE,
        default_value: cstr!("64K"),
        doc: cstr!("With reduce_algorithm=auto: reductions of at least this many bytes (4 times as many on teams of 2) use the split form"),
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bcast {
    Binomial,
    Linear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fcollect {
    Bruck,
    Linear,
}

/// The form of a reduction to all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Linear,
    Tree,
    Split,
}

/// `reduce_split_min`'s default.
const SPLIT_MIN: usize = 64 << 10;

/// How reductions to all choose their form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// The table: on teams of 3 or more, tree below `split_min` bytes and split from it; on
    /// teams of 2, linear below 4 * `split_min` and split from it. Measured on the network
    /// path (docs/performance.md): with 2 members the tree serialises a get and a put where
    /// linear makes the two gets at once, and splitting saves less.
    Auto { split_min: usize },
    /// This form at every size.
    Only(Form),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub bcast: Bcast,
    pub fcollect: Fcollect,
    pub reduce: Reduce,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            bcast: Bcast::Binomial,
            fcollect: Fcollect::Bruck,
            reduce: Reduce::Auto { split_min: SPLIT_MIN },
        }
    }
}

impl Tuning {
    /// The form of a reduction to all of `nbytes` on a team of `n`.
    pub fn reduce_form(&self, nbytes: usize, n: i32) -> Form {
        if n < 2 || nbytes == 0 {
            return Form::Linear;
        }
        match self.reduce {
            Reduce::Only(f) => f,
            Reduce::Auto { split_min } if n == 2 => {
                if nbytes >= split_min.saturating_mul(4) {
                    Form::Split
                } else {
                    Form::Linear
                }
            }
            Reduce::Auto { split_min } => {
                if nbytes >= split_min {
                    Form::Split
                } else {
                    Form::Tree
                }
            }
        }
    }
}

/// The values for this job, read once from the core (which has checked their kinds). An
/// unknown algorithm name ends the job, on every PE alike (the core has checked that the
/// values agree).
pub fn get(c: &CoreServices) -> Tuning {
    static TUNING: OnceLock<Tuning> = OnceLock::new();
    *TUNING.get_or_init(|| {
        // SAFETY: `c` is the core's table.
        let read = |name: &str| unsafe { rshmem_plugin_api::param(c, "scoll", "basic", name) };
        match from(read) {
            Ok(t) => {
                rshmem_plugin_api::boundary::log(LOG_DEBUG, "scoll basic", &format!("algorithms: {t:?}"));
                t
            }
            Err(msg) => {
                let msg = std::ffi::CString::new(msg).unwrap_or_default();
                // SAFETY: core service; it does not return.
                unsafe { (c.abort)(1, msg.as_ptr()) };
                unreachable!("the core's abort returned")
            }
        }
    })
}

/// The tuning from `read(name)` (None: the default), or the message naming a bad value.
fn from(read: impl Fn(&str) -> Option<String>) -> Result<Tuning, String> {
    let choice = |name: &str, choices: &[&str]| -> Result<Option<usize>, String> {
        let Some(v) = read(name) else { return Ok(None) };
        let v = v.trim().to_ascii_lowercase();
        match choices.iter().position(|c| *c == v) {
            Some(i) => Ok(Some(i)),
            None => Err(format!(
                "SHMEM_MCA_scoll_basic_{name}={v:?}: not an algorithm of scoll basic (expected one of: {})",
                choices.join(", ")
            )),
        }
    };
    let bcast = match choice("bcast_algorithm", &["auto", "binomial", "linear"])? {
        None | Some(0) | Some(1) => Bcast::Binomial,
        _ => Bcast::Linear,
    };
    let fcollect = match choice("fcollect_algorithm", &["auto", "bruck", "linear"])? {
        None | Some(0) | Some(1) => Fcollect::Bruck,
        _ => Fcollect::Linear,
    };
    let min = read("reduce_split_min").and_then(|v| parse_size(&v));
    let reduce = match choice("reduce_algorithm", &["auto", "tree", "split", "linear"])? {
        None | Some(0) => Reduce::Auto { split_min: min.unwrap_or(SPLIT_MIN) },
        Some(1) => Reduce::Only(Form::Tree),
        Some(2) => Reduce::Only(Form::Split),
        _ => Reduce::Only(Form::Linear),
    };
    Ok(Tuning { bcast, fcollect, reduce })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_declarations_and_choices_are_checked() {
        assert_eq!(from(|_| None), Ok(Tuning::default()));
        let t = from(|n| match n {
            "bcast_algorithm" => Some(" Linear".into()),
            "reduce_split_min" => Some("1.5k".into()),
            _ => None,
        });
        assert_eq!(
            t,
            Ok(Tuning {
                bcast: Bcast::Linear,
                fcollect: Fcollect::Bruck,
                reduce: Reduce::Auto { split_min: 1536 }
            })
        );
        let f = from(|n| (n == "fcollect_algorithm").then(|| "LINEAR".into())).unwrap();
        assert_eq!(f.fcollect, Fcollect::Linear);
        let e = from(|n| (n == "fcollect_algorithm").then(|| "ring".into())).unwrap_err();
        assert!(
            e.contains("SHMEM_MCA_scoll_basic_fcollect_algorithm=\"ring\"")
                && e.contains("auto, bruck, linear"),
            "{e}"
        );
        let algo = |a: &str| from(|n| (n == "reduce_algorithm").then(|| a.to_string())).unwrap();
        let split = algo("split");
        assert_eq!(split.reduce_form(1, 2), Form::Split);
        assert_eq!(split.reduce_form(0, 2), Form::Linear, "nothing to reduce");
        assert_eq!(split.reduce_form(4096, 1), Form::Linear, "one member");
        assert_eq!(algo("linear").reduce_form(1 << 30, 8), Form::Linear);
        assert_eq!(algo("tree").reduce_form(1 << 30, 8), Form::Tree);
        let auto = Tuning::default();
        assert_eq!(auto.reduce_form((64 << 10) - 1, 4), Form::Tree);
        assert_eq!(auto.reduce_form(64 << 10, 4), Form::Split);
        assert_eq!(auto.reduce_form(8, 2), Form::Linear);
        assert_eq!(auto.reduce_form((256 << 10) - 1, 2), Form::Linear);
        assert_eq!(auto.reduce_form(256 << 10, 2), Form::Split);
        assert_eq!(algo("tree").reduce_form(8, 2), Form::Tree, "a choice holds on 2 members too");
        let e = from(|n| (n == "reduce_algorithm").then(|| "ring".into())).unwrap_err();
        assert!(
            e.contains("SHMEM_MCA_scoll_basic_reduce_algorithm=\"ring\"")
                && e.contains("tree, split, linear"),
            "{e}"
        );
    }
}
