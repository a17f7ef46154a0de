# Short, readable progress for the set-up scripts (sourced, not run).
#
# The terminal gets one line per step: what it does, then its duration when it finishes, and a
# total at the end. Everything the steps print (apt, pip, debootstrap, docker import) goes to one
# log file, whose path is printed at the end; when a step fails, its name and the last lines of
# that log are printed instead. Scripts that call each other share the log and the clock through
# RSR_SETUP_LOG / RSR_SETUP_T0, and only the outermost one prints the total.
#
#   source setup-progress.sh
#   progress_begin setup "$default_log"     # tag for the lines, log used unless RSR_SETUP_LOG is set
#   progress_step "installing chromium" apt-get install -y chromium
#   progress_note "docker engine 26.1 already running"
#   progress_end "ready"
#
# A step's command runs in a subshell with `set -e` in force, so a shell function given as the
# command stops at its first failing line, exactly as it would outside the step.

PROGRESS_TAIL_LINES="${PROGRESS_TAIL_LINES:-30}"

_progress_now() { date +%s.%N; }

# Seconds as "0.4 s", "12.3 s" or "2m05s".
_progress_duration() {
  awk -v s="$1" 'BEGIN { if (s < 60) printf "%.1f s", s; else printf "%dm%02ds", int(s / 60), int(s % 60) }'
}

_progress_since() { _progress_duration "$(awk -v a="$1" -v b="$(_progress_now)" 'BEGIN { print b - a }')"; }

progress_begin() {
  PROGRESS_TAG="$1"
  if [ -n "${RSR_SETUP_LOG:-}" ] && [ -n "${RSR_SETUP_T0:-}" ]; then
    PROGRESS_OUTERMOST=0  # called by another set-up script: its log, its clock, its total
  else
    PROGRESS_OUTERMOST=1
    RSR_SETUP_LOG="${RSR_SETUP_LOG:-$2}"
    RSR_SETUP_T0="$(_progress_now)"
    mkdir -p "$(dirname "$RSR_SETUP_LOG")"
    : >"$RSR_SETUP_LOG"  # this run's output only; a stale failure must not look like a new one
    printf '[%s] started %s; command output goes to %s\n' "$PROGRESS_TAG" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
      "$RSR_SETUP_LOG" >&2
  fi
  export RSR_SETUP_LOG RSR_SETUP_T0
}

progress_note() { printf '[%s] %s\n' "$PROGRESS_TAG" "$*" >&2; }

# progress_step LABEL COMMAND [ARGS...]: runs COMMAND with its output in the log; prints
# "LABEL ... 3.2 s" on success; on failure prints the tail of the log and exits with its status.
progress_step() {
  local label="$1"; shift
  local started rc
  started="$(_progress_now)"
  printf '[%s] %s ... ' "$PROGRESS_TAG" "$label" >&2
  printf '\n=== [%s] %s: %s\n' "$PROGRESS_TAG" "$label" "$*" >>"$RSR_SETUP_LOG"
  # Not inside `if` or `||`: there bash would switch `set -e` off for the whole command.
  set +e
  (set -e; "$@") </dev/null >>"$RSR_SETUP_LOG" 2>&1
  rc=$?
  set -e
  if [ "$rc" = 0 ]; then
    printf '%s\n' "$(_progress_since "$started")" >&2
    return 0
  fi
  printf 'FAILED after %s (exit %s)\n' "$(_progress_since "$started")" "$rc" >&2
  printf -- '--- last %s lines of %s ---\n' "$PROGRESS_TAIL_LINES" "$RSR_SETUP_LOG" >&2
  tail -n "$PROGRESS_TAIL_LINES" "$RSR_SETUP_LOG" >&2
  printf -- '---\n[%s] step "%s" failed; full log: %s\n' "$PROGRESS_TAG" "$label" "$RSR_SETUP_LOG" >&2
  exit "$rc"
}

# progress_end [WORDS]: the outermost script prints the total time and the log's path.
progress_end() {
  if [ "${PROGRESS_OUTERMOST:-1}" = 1 ]; then
    printf '[%s] %s in %s; full log: %s\n' "$PROGRESS_TAG" "${1:-done}" "$(_progress_since "$RSR_SETUP_T0")" \
      "$RSR_SETUP_LOG" >&2
  fi
}
