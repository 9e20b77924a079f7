//! A playbook letter recorded as not applying, as its trailers hold it.

use anyhow::Result;

use crate::rules::trailers::Block;

/// A playbook letter recorded as not applying to this kernel (`next --skip`), on an empty commit of its
/// own: `next` and every `next_action` stop offering it. There is no un-skip: the record only grows, and
/// `step --opt` still takes a skipped letter (it is then tried).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skip {
    pub letter: String,
    /// Why it cannot apply, in the agent's words.
    pub why: String,
}

impl Skip {
    pub fn write(&self, block: &mut Block) {
        block.push("Skip", &self.letter);
        block.push("Skip-Why", &self.why);
    }

    /// The skip recorded in a commit's trailers; `None` if the block holds none.
    pub fn read(block: &Block) -> Result<Option<Skip>> {
        let Some(letter) = block.get("Skip")? else {
            return Ok(None);
        };
        Ok(Some(Skip {
            letter: letter.to_string(),
            why: block.require("Skip-Why")?.to_string(),
        }))
    }
}
