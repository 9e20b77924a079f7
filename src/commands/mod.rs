//! One module per verb. A verb that works on a repository takes it opened, with its options and a writer
//! for what it prints, and returns a typed report (gitoxide-core's shape): `main` opens the repository of
//! the current directory, and a test can run the verb on a repository it prepared, without the binary.

pub mod compare;
pub mod demo;
pub mod diagnose;
pub mod extras;
pub mod hook;
pub mod inspect;
pub mod next;
pub mod plot;
pub mod refs;
pub mod repair;
pub mod start;
pub mod status;
pub mod step;
pub mod table;
pub mod verify;
