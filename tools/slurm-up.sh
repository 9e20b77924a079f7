#!/usr/bin/env bash
# Brings up a real single-node Slurm on this Debian machine (as root, without systemd), for the Slurm
# runner's integration tests and for trying `start --runner slurm` by hand:
#   munged, slurmctld and slurmd; one node with this machine's CPUs; one partition; no slurmdbd, so
#   final job states go to a job-completion log ($JOBCOMP_LOG).
# Safe to run twice: a cluster that already answers `srun -N1 hostname` is left as it is.
#
# slurmd runs in its own mount namespace where $HIDDEN_DIR is an empty tmpfs: a work tree under it
# exists on this "login node" but not on the compute node, like a login node's local disk.
#
# Exit codes: 0 up; 2 not possible here (not root, no apt-get); 1 failed.
set -euo pipefail

SLURM_CONF=/etc/slurm/slurm.conf
LOG_DIR=/var/log/slurm
JOBCOMP_LOG=$LOG_DIR/jobcomp.log
HIDDEN_DIR=/srv/cutile-perf-login-only
MARKER=$HIDDEN_DIR/.visible-on-login-node-only

say() { echo "slurm-up: $*" >&2; }

answers() { timeout 15 srun -N1 --quiet hostname >/dev/null 2>&1; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "needs root on Debian (apt-get); Slurm not started"
  exit 2
fi
started=$(date +%s)

if command -v srun >/dev/null && answers; then
  say "already up ($(srun -N1 --quiet hostname))"
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq slurm-wlm munge >/dev/null
fi

# munge: a key of our own if the package did not make one, and the daemon as the munge user
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge /var/lib/munge /var/log/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

host=$(hostname -s)
cpus=$(nproc)
install -d -m 755 /etc/slurm "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd "$HIDDEN_DIR"
touch "$MARKER"
cat >"$SLURM_CONF" <<EOF
# written by tools/slurm-up.sh: a single-node test cluster
ClusterName=cutileperf
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# no cgroups in containers: track processes by parentage, bind nothing
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
# tests cancel jobs often: SIGKILL soon after SIGTERM
KillWait=2
JobCompType=jobcomp/filetxt
JobCompLoc=$JOBCOMP_LOG
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
# tests run several sessions at once: each CPU may be shared by a few jobs
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF

# stop daemons an earlier run left behind (by their pid files only), then start fresh ones
for daemon in slurmd slurmctld; do
  pid_file=/run/$daemon.pid
  if [ -s "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    kill "$(cat "$pid_file")"
    for _ in $(seq 50); do kill -0 "$(cat "$pid_file")" 2>/dev/null || break; sleep 0.1; done
  fi
done
/usr/sbin/slurmctld
# without mount namespaces (a restricted container) the node sees everything; that one test then skips
unshare --mount --propagation private true 2>/dev/null || say "no mount namespace: $HIDDEN_DIR stays visible to the node"
unshare --mount --propagation private \
  sh -c "mount -t tmpfs -o size=1m cutile-perf-node-view '$HIDDEN_DIR' 2>/dev/null; exec /usr/sbin/slurmd" 2>/dev/null ||
  /usr/sbin/slurmd

for _ in $(seq 120); do
  if answers; then
    say "up in $(($(date +%s) - started))s: node $host, $cpus CPUs, job-completion log $JOBCOMP_LOG"
    exit 0
  fi
  scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
  sleep 0.5
done
say "srun -N1 hostname does not answer; see $LOG_DIR/slurmctld.log and $LOG_DIR/slurmd.log"
exit 1
