//! Measurement: how a step measures the candidate against the current baseline. The attempt
//! (`attempt.rs`: correctness, the paired rounds, the confirmation, the unseen inputs) runs the rounds
//! (`rounds.rs`) on the sides set up before anything is measured (`sides.rs`: each GPU's share of the
//! cases, the two sides' code, their workers), over the paired rounds themselves and the workers held
//! for them (`paired/`). A new timing source or a change to the rounds has its home here; the workers
//! are a seam of `system/`, the census what `record/` keeps.

pub mod attempt;
pub mod paired;
pub mod rounds;
pub mod sides;
pub mod timings;
