//! What the tool offers the agent that drives its loop: the next action every report carries, the Agent
//! Skill that teaches the loop, and the MCP server that exposes the verbs as tools.

pub mod mcp;
pub mod next_action;
pub mod skill;
