#!/usr/bin/env bash
# Create (once) and cache the TensorFlow interpreters that the round-trip
# tests and `migrate-tpu run --python` use:
#
#   tf2.1   Python 3.7 + tensorflow-cpu 2.1.0   (code before migration)
#   tf2.2   Python 3.8 + tensorflow-cpu 2.2.3   (code of the TF 2.2 era: its API surface's reference)
#   tf2.3   Python 3.8 + tensorflow-cpu 2.3.4   (code of the TF 2.3 era: likewise)
#   tf2.4   Python 3.8 + tensorflow-cpu 2.4.1   (code after migration)
#   tf2.21  Python 3.11 + tensorflow-cpu 2.21.0 + tf-keras (current TF, Keras 2 code)
#
# Each also gets matplotlib, which nearly every tutorial and notebook imports, and SciPy
# (Keras' image transformations need it); tf2.21 also TensorBoard.
#
# Usage: migrate-tpu envs (or, in the source tree, scripts/tf-envs) [--check] [ENV...]      (default: all five)
#   --check   only report what exists; create nothing
#
# Envs live under ${MIGRATE_TPU_ENVS:-$HOME/.cache/migrate-tpu/envs}/<name> and
# take about 5 GB together (tf2.1 0.7 GB, tf2.2 0.7 GB, tf2.3 0.7 GB, tf2.4 0.7 GB,
# tf2.21 2.2 GB), plus
# what pip keeps in its download cache. Building them takes a few minutes; the
# envs are built side by side and each reports its progress as it goes.
# An env is reused when its stamp (the pinned requirement list) matches and its
# interpreter still imports TensorFlow, so a second run takes a few seconds.
# Interpreters are found via MIGRATE_TPU_PYTHON37 / _PYTHON38 / _PYTHON311,
# then pyenv, then python3.X on PATH.  A missing interpreter or a failed
# install is reported loudly and skipped; the script exits 0 unless --strict.
set -u

ENVS_DIR="${MIGRATE_TPU_ENVS:-$HOME/.cache/migrate-tpu/envs}"
# How the user called this script, for the messages that tell them what to run.
COMMAND_NAME="${MIGRATE_TPU_ENVS_COMMAND:-scripts/tf-envs}"
CHECK_ONLY=0
STRICT=0
WANT=()
for arg in "$@"; do
  case "$arg" in
    --check) CHECK_ONLY=1 ;;
    --strict) STRICT=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    tf2.1|tf2.2|tf2.3|tf2.4|tf2.21) WANT+=("$arg") ;;
    *) echo "tf-envs: unknown argument: $arg (env names: tf2.1 tf2.2 tf2.3 tf2.4 tf2.21; options: --check --strict --help)" >&2; exit 2 ;;
  esac
done
[ ${#WANT[@]} -eq 0 ] && WANT=(tf2.1 tf2.2 tf2.3 tf2.4 tf2.21)

# Pinned requirements. Old TF releases import only with the dependency
# versions of their day: protobuf 4 breaks their generated *_pb2 modules,
# numpy >= 1.20/1.24 breaks tensor conversion / removed aliases, h5py 3 breaks
# Keras 2.1/2.4 weight loading.
REQ_tf2_1="tensorflow-cpu==2.1.0 numpy==1.18.5 protobuf==3.19.6 h5py==2.10.0 scipy==1.4.1 gast==0.2.2 six>=1.12"
REQ_tf2_2="tensorflow-cpu==2.2.3 numpy==1.18.5 protobuf==3.19.6 h5py==2.10.0 scipy==1.4.1 gast==0.3.3 six>=1.12"
REQ_tf2_3="tensorflow-cpu==2.3.4 numpy==1.18.5 protobuf==3.19.6 h5py==2.10.0 scipy==1.4.1 gast==0.3.3 six>=1.12"
REQ_tf2_4="tensorflow-cpu==2.4.1 numpy==1.19.5 protobuf==3.19.6 h5py==2.10.0 six~=1.15.0"
REQ_tf2_21="tensorflow-cpu==2.21.0 tf-keras"
# What tutorials and Colab notebooks import beside TensorFlow (nearly every one plots;
# Keras' ImageDataGenerator transforms images with SciPy, which tf2.1-tf2.3 pin above):
# installed into a ready env without rebuilding it, with its own stamp, and with the env's
# numpy held where it is (a newer numpy breaks the old releases). Versions that still
# support the env's Python and numpy: matplotlib 3.5.3 needs numpy >= 1.17 and runs on 3.7,
# SciPy 1.6.3 needs numpy >= 1.16.5. TensorFlow 2.21 no longer brings TensorBoard, which
# tf.summary's image ops and Keras' TensorBoard callback need.
EXTRAS_tf2_1="matplotlib==3.5.3"
EXTRAS_tf2_2="matplotlib==3.5.3"
EXTRAS_tf2_3="matplotlib==3.5.3"
EXTRAS_tf2_4="matplotlib==3.5.3 scipy==1.6.3"
EXTRAS_tf2_21="matplotlib==3.9.2 scipy==1.17.1 tensorboard==2.21.0"
PYVER_tf2_1=3.7
PYVER_tf2_2=3.8
PYVER_tf2_3=3.8
PYVER_tf2_4=3.8
PYVER_tf2_21=3.11
TFVER_tf2_1=2.1.0
TFVER_tf2_2=2.2.3
TFVER_tf2_3=2.3.4
TFVER_tf2_4=2.4.1
TFVER_tf2_21=2.21.0
# Disk used by each built env, in tenths of a GB (measured with du -s).
SIZE_tf2_1=7
SIZE_tf2_2=7
SIZE_tf2_3=7
SIZE_tf2_4=7
SIZE_tf2_21=22
# Seconds between progress lines while pip installs.
HEARTBEAT=15

say() { printf 'tf-envs: %s\n' "$*"; }
loud() {
  printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  printf '!!! tf-envs: %s\n' "$@" >&2
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
}

find_python() {  # $1 = 3.7 | 3.8 | 3.11
  local ver="$1" var cand root
  var="MIGRATE_TPU_PYTHON${ver//./}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return 0; fi
  if command -v pyenv >/dev/null 2>&1; then
    root="$(pyenv root 2>/dev/null)"
  else
    root="${PYENV_ROOT:-$HOME/.pyenv}"
  fi
  for cand in $(ls -d "$root"/versions/"$ver".* 2>/dev/null | sort -V -r); do
    if [ -x "$cand/bin/python" ]; then echo "$cand/bin/python"; return 0; fi
  done
  if command -v "python$ver" >/dev/null 2>&1; then command -v "python$ver"; return 0; fi
  return 1
}

tf_version_of() {  # $1 = python; prints tf.__version__ or nothing
  "$1" -c 'import os; os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3"); import tensorflow as tf; print(tf.__version__)' 2>/dev/null | tail -n 1
}

is_ready() {  # $1 = name. Cached: same pins, interpreter runs, TensorFlow's files still there (no slow import).
  local key="${1//./_}" req_var tf_var dir
  req_var="REQ_$key"; tf_var="TFVER_$key"; dir="$ENVS_DIR/$1"
  [ -f "$dir/.migrate-tpu-stamp" ] && [ "$(cat "$dir/.migrate-tpu-stamp")" = "${!req_var}" ] &&
    "$dir/bin/python" -c '' 2>/dev/null &&
    compgen -G "$dir/lib/python*/site-packages/tensorflow_cpu-${!tf_var}.dist-info" >/dev/null &&
    compgen -G "$dir/lib/python*/site-packages/tensorflow*/__init__.py" >/dev/null
}

with_heartbeat() {  # $1 = name, $2 = log, $3 = started; runs the rest, printing progress from the log meanwhile
  local name="$1" log="$2" started="$3" pid last
  shift 3
  "$@" >"$log" 2>&1 &
  pid=$!
  while ! wait_for "$pid" "$HEARTBEAT"; do
    # pip's latest "Collecting / Downloading / Installing" line says where it is.
    last="$(grep -E '^(Collecting|Downloading|  Downloading|Installing|Building|Successfully)' "$log" 2>/dev/null | tail -n 1 | sed 's/^ *//' | cut -c1-100)"
    say "$name: installing, $(( $(date +%s) - started ))s so far${last:+: $last}"
  done
  wait "$pid"
}

wait_for() {  # $1 = pid, $2 = seconds; 0 once the process has ended, 1 if it still runs after $2 s
  local i
  for (( i = 0; i < $2 * 2; i++ )); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -0 "$1" 2>/dev/null && return 1
  return 0
}

extras_ready() {  # $1 = name: the env's companions are installed (same list as its stamp)
  local extras_var="EXTRAS_${1//./_}" stamp="$ENVS_DIR/$1/.migrate-tpu-extras-stamp"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${!extras_var}" ]
}

add_extras() {  # $1 = name, $2 = started. A failure is loud but leaves the env usable (returns 0).
  local name="$1" started="$2" extras_var="EXTRAS_${1//./_}" dir="$ENVS_DIR/$1" numpy log
  extras_ready "$name" && return 0
  if [ "$CHECK_ONLY" = 1 ]; then
    say "$name: lacks ${!extras_var} (what notebooks import beside TensorFlow; run $COMMAND_NAME $name)"
    return 0
  fi
  # Hold numpy at the version TensorFlow was installed with: pip would otherwise upgrade it.
  numpy="$("$dir/bin/python" -c 'import numpy; print(numpy.__version__)' 2>/dev/null)"
  log="$dir/extras.log"
  say "$name: pip install ${!extras_var}${numpy:+ (numpy held at $numpy)}  (log: $log)"
  if with_heartbeat "$name" "$log" "$started" \
       "$dir/bin/python" -m pip install --progress-bar off ${!extras_var} ${numpy:+"numpy==$numpy"}; then
    printf '%s' "${!extras_var}" >"$dir/.migrate-tpu-extras-stamp"
  else
    tail -n 20 "$log" >&2
    loud "$name: pip install ${!extras_var} failed (see $log); TensorFlow works, but programs that import it will not run there"
  fi
  return 0
}

process_env() {  # $1 = name; returns 0 when the env is ready
  local name="$1" key req_var py_var tf_var req pyver tfver dir stamp started got py log
  key="${name//./_}"
  req_var="REQ_$key"; py_var="PYVER_$key"; tf_var="TFVER_$key"
  req="${!req_var}"; pyver="${!py_var}"; tfver="${!tf_var}"
  dir="$ENVS_DIR/$name"
  stamp="$dir/.migrate-tpu-stamp"
  started=$(date +%s)

  if is_ready "$name"; then
    add_extras "$name" "$started"
    say "$name: ready ($dir/bin/python, TensorFlow $tfver)"
    return 0
  fi
  if [ -f "$stamp" ]; then
    say "$name: cached env is incomplete or has other pins; rebuilding"
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    loud "$name: not created (run $COMMAND_NAME $name)"
    return 1
  fi
  if ! py="$(find_python "$pyver")"; then
    loud "$name: no Python $pyver interpreter found (set MIGRATE_TPU_PYTHON${pyver//./}=/path/to/python$pyver);" \
         "the round-trip tests for TensorFlow $tfver will be SKIPPED (and FAIL under CI=true)"
    return 1
  fi
  say "$name: creating $dir with $py ($("$py" -V 2>&1))"
  rm -rf "$dir"
  if ! "$py" -m venv "$dir"; then
    loud "$name: '$py -m venv' failed; TensorFlow $tfver round-trip tests will be SKIPPED (and FAIL under CI=true)"
    return 1
  fi
  log="$dir/install.log"
  say "$name: pip install $req  (log: $log)"
  # Old pip on 3.7/3.8 venvs cannot read some newer wheel metadata; upgrade first.
  if ! with_heartbeat "$name" "$log" "$started" \
       bash -c '"$1" -m pip install -q --upgrade "pip<24.1" "setuptools<68" wheel && "$1" -m pip install --progress-bar off $2' \
       _ "$dir/bin/python" "$req"; then
    tail -n 30 "$log" >&2
    loud "$name: pip install failed (see $log); TensorFlow $tfver round-trip tests will be SKIPPED (and FAIL under CI=true)"
    return 1
  fi
  got="$(tf_version_of "$dir/bin/python")"
  if [ "$got" != "$tfver" ]; then
    "$dir/bin/python" -c 'import tensorflow' 2>&1 | tail -n 20 >&2
    loud "$name: installed, but 'import tensorflow' does not give $tfver (got '${got}')"
    return 1
  fi
  printf '%s' "$req" >"$stamp"
  add_extras "$name" "$started"
  say "$name: ready ($dir/bin/python, TensorFlow $got) in $(( $(date +%s) - started ))s"
  return 0
}

STATUS=0
mkdir -p "$ENVS_DIR" 2>/dev/null || true
if [ "$CHECK_ONLY" = 0 ]; then
  TO_BUILD=() TENTHS=0
  for name in "${WANT[@]}"; do
    if ! is_ready "$name"; then
      size_var="SIZE_${name//./_}"
      TO_BUILD+=("$name ($(( ${!size_var} / 10 )).$(( ${!size_var} % 10 )) GB)")
      TENTHS=$(( TENTHS + ${!size_var} ))
    fi
  done
  if [ ${#TO_BUILD[@]} -gt 0 ]; then
    say "building ${TO_BUILD[*]}: about $(( TENTHS / 10 )).$(( TENTHS % 10 )) GB under $ENVS_DIR, plus pip's download cache; a few minutes"
  fi
fi
# The environments are independent: build them side by side (downloads
# dominate). Each line names its env, so their progress can interleave.
PIDS=()
for name in "${WANT[@]}"; do
  process_env "$name" 2>&1 &
  PIDS+=($!)
done
for i in "${!WANT[@]}"; do
  if ! wait "${PIDS[$i]}"; then STATUS=1; fi
done

if [ "$STRICT" = 1 ]; then exit "$STATUS"; fi
exit 0
