//! What Slurm's client programs print, read: the job id `sbatch --parsable` gives, a job's line of
//! `squeue`, and why a job's commands stopped when the job ended. Apart from the allocation because it
//! is pure text in, facts out, tested without Slurm.

/// One line of `squeue -o STATUS_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    pub state: String,
    pub node: String,
    pub reason: String,
}

/// A job Slurm has not started yet (or is starting).
pub(super) fn is_waiting(state: &str) -> bool {
    matches!(state, "PENDING" | "CONFIGURING" | "REQUEUED")
}

/// A job that still holds (or may get) its node.
pub(super) fn is_alive(state: &str) -> bool {
    is_waiting(state) || matches!(state, "RUNNING" | "COMPLETING" | "SUSPENDED")
}

/// The job id in `sbatch --parsable` output: `id` or `id;cluster`.
pub fn parse_submitted(stdout: &str) -> Option<String> {
    let id = stdout.lines().next()?.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

/// The first line of `squeue -h -o STATUS_FORMAT`, or `None` when squeue no longer knows the job.
pub fn parse_status(stdout: &str) -> Option<JobStatus> {
    let mut fields = stdout.lines().next()?.split('|');
    let state = fields.next()?.trim();
    if state.is_empty() {
        return None;
    }
    Some(JobStatus {
        state: state.to_string(),
        node: fields.next().unwrap_or("").trim().to_string(),
        reason: fields.next().unwrap_or("").trim().to_string(),
    })
}

/// Why the commands of job `job` stopped when the job itself ended (`None` while it runs).
pub fn loss_reason(job: &str, status: Option<&JobStatus>) -> Option<String> {
    let Some(status) = status else {
        return Some(format!("the Slurm job {job} is gone from the queue"));
    };
    let node = if status.node.is_empty() {
        String::new()
    } else {
        format!(" on node {}", status.node)
    };
    Some(match status.state.as_str() {
        "RUNNING" => return None,
        "NODE_FAIL" => format!("the node failed under Slurm job {job}{node} (NODE_FAIL)"),
        "PREEMPTED" => format!("Slurm preempted job {job}{node} (PREEMPTED)"),
        "CANCELLED" => format!("the Slurm job {job}{node} was cancelled from outside (CANCELLED)"),
        "TIMEOUT" => format!(
            "the Slurm job {job}{node} reached its time limit (TIMEOUT): ask for more with -t in --slurm-args"
        ),
        "OUT_OF_MEMORY" => format!("the Slurm job {job}{node} ran out of memory (OUT_OF_MEMORY)"),
        state => format!("the Slurm job {job}{node} ended: {state}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submitted_job_ids() {
        assert_eq!(parse_submitted("1234\n"), Some("1234".into()));
        assert_eq!(parse_submitted("77;cluster-a\n"), Some("77".into()));
        assert_eq!(parse_submitted(""), None);
        assert_eq!(parse_submitted("Submitted batch job 5\n"), None);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            parse_status("PENDING||BeginTime\n"),
            Some(JobStatus {
                state: "PENDING".into(),
                node: "".into(),
                reason: "BeginTime".into()
            })
        );
        assert_eq!(parse_status("RUNNING|gpu07|None").unwrap().node, "gpu07");
        assert_eq!(parse_status(""), None);
    }

    #[test]
    fn losses_name_the_job_and_the_cause() {
        let status = |state: &str| JobStatus {
            state: state.into(),
            node: "gpu07".into(),
            reason: "None".into(),
        };
        assert_eq!(loss_reason("9", Some(&status("RUNNING"))), None);
        assert_eq!(
            loss_reason("9", Some(&status("NODE_FAIL"))).unwrap(),
            "the node failed under Slurm job 9 on node gpu07 (NODE_FAIL)"
        );
        assert_eq!(
            loss_reason("9", Some(&status("PREEMPTED"))).unwrap(),
            "Slurm preempted job 9 on node gpu07 (PREEMPTED)"
        );
        assert!(
            loss_reason("9", Some(&status("CANCELLED")))
                .unwrap()
                .contains("cancelled")
        );
        assert_eq!(
            loss_reason("9", None).unwrap(),
            "the Slurm job 9 is gone from the queue"
        );
    }
}
