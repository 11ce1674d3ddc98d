# Sourced by .ci/run: run a command as root, and apt-get that waits its turn.
#
# Another install on the machine (unattended-upgrades, a second CI run, a person's apt-get) holds the package
# manager's locks while it runs; plain apt-get then fails at once ("Could not get lock"). apt_get passes
# DPkg::Lock::Timeout so apt-get itself waits for the dpkg lock, and tries again while the lists lock of
# `apt-get update` (which that option does not cover on every apt) is held, for up to APT_LOCK_WAIT_S seconds.

APT_LOCK_WAIT_S=${APT_LOCK_WAIT_S:-600}
APT_RETRY_S=${APT_RETRY_S:-5}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_get() {
    # apt_get ARGS...: `apt-get ARGS` as root, non-interactive, waiting for the package manager's locks.
    local started log
    started=$(date +%s)
    log=$(mktemp)
    while true; do
        if as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" "$@" 2>&1 \
                | tee "$log"; then
            rm -f "$log"
            return 0
        fi
        if ! grep -qE "Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock" "$log"; then
            rm -f "$log"
            return 1
        fi
        if [ $(($(date +%s) - started)) -ge "$APT_LOCK_WAIT_S" ]; then
            echo "The package manager was still locked by another install after ${APT_LOCK_WAIT_S} s." >&2
            rm -f "$log"
            return 1
        fi
        echo "Another install holds the package manager's lock: trying again in ${APT_RETRY_S} s ..."
        sleep "$APT_RETRY_S"
    done
}
