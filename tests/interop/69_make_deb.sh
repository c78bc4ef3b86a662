#!/bin/bash
# Issue 25: `make deb` builds a Debian package with debhelper
# (dpkg-buildpackage -us -uc); lintian finds no errors; the package holds
# the binaries, the units (enabled: ferryd.service and ferryd.socket) and an
# /etc/ferryd.conf conffile whose module the packaged ferry serves.
#
# The package is not installed here (dpkg -i would change the machine other
# tests run on, and systemd is not PID 1 to start it): it is unpacked into
# the test directory and its daemon run from there with the package's
# config, under the unit's NoNewPrivileges and capability bounding set.
. "$(dirname "$0")/lib.sh"
t_setup

# The package is built from the source tree, not from the ferry under test:
# building it once, in the release pass, is enough.
case $FERRY in
*/asan/*)
    t_skip "$(_t_script_name)" "the package build does not depend on the build under test (release pass only)"
    exit 0
    ;;
esac
t_require dpkg-buildpackage dh dpkg-deb

DEB_DIR=$T/deb
DEB_BUILD_OPTIONS=parallel=2 make -s -C "$FERRY_SRC" deb DEB_DIR="$DEB_DIR" >"$T/deb.out" 2>&1
rc=$?
tail -n 20 "$T/deb.out"
deb=$(find "$DEB_DIR" -maxdepth 1 -name "ferry_*_*.deb" ! -name "*dbgsym*" | head -n 1)
if [ "$rc" = 0 ] && [ -f "$deb" ]; then
    t_pass deb_builds
else
    t_fail deb_builds "make deb: exit $rc, no .deb"
    t_done
fi

if command -v lintian >/dev/null 2>&1; then
    lintian "$DEB_DIR"/ferry_*.changes >"$T/lintian.out" 2>&1
    rc=$?
    cat "$T/lintian.out"
    if [ "$rc" = 0 ] && ! grep -q '^E:' "$T/lintian.out"; then
        t_pass deb_lintian_no_errors
    else
        t_fail deb_lintian_no_errors "exit $rc: $(grep '^E:' "$T/lintian.out" | head -n 3)"
    fi
else
    t_skip deb_lintian_no_errors "lintian not found"
fi

X=$T/root
dpkg-deb -x "$deb" "$X" && dpkg-deb -e "$deb" "$T/control" || {
    t_fail deb_contents "dpkg-deb could not unpack $deb"
    t_done
}
deb_contents() {
    local f
    for f in usr/bin/ferry usr/bin/ferry-pg-mirror usr/lib/ferry/ferry_pg_mirror.py \
        lib/systemd/system/ferryd.service lib/systemd/system/ferryd.socket \
        lib/systemd/system/ferryd-inetd@.service lib/systemd/system/ferryd-inetd.socket \
        usr/share/man/man1/ferry.1.gz usr/share/man/man5/ferryd.conf.5.gz \
        usr/share/doc/ferry/ferryd.conf.example usr/share/doc/ferry/copyright etc/ferryd.conf; do
        [ -e "$X/$f" ] || { echo "missing: $f"; return 1; }
    done
    # Debian compiles Python on the target; the units name /usr/bin/ferry.
    ! find "$X" -name '*.pyc' | grep . &&
        grep -q '^ExecStart=/usr/bin/ferry ' "$X/lib/systemd/system/ferryd.service" &&
        grep -qx /etc/ferryd.conf "$T/control/conffiles" &&
        grep -q "enable 'ferryd.service'" "$T/control/postinst" &&
        ! grep -q "ferryd-inetd" "$T/control/postinst"
}
t_check deb_contents deb_contents

# Serve the package's module with the package's binary and config (paths
# moved into $X and $T), as root under the unit's privileges when we can.
serve_packaged_module() {
    local conf=$T/ferryd.conf caps port pid
    sed -e "s|/run/|$T/|; s|/var/log/|$T/|; s|path = /|path = $X/|" \
        "$X/etc/ferryd.conf" >"$conf"
    cat "$conf"
    "$X/usr/bin/ferry" --daemon --check-config --config="$conf" || return 1
    local run=("$X/usr/bin/ferry")
    if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
        chmod 755 "$T" "$X" "$X/usr" "$X/usr/share" "$X/usr/share/doc"
        caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$X/lib/systemd/system/ferryd.service" |
            tr ' ' '\n' | sed -n 's/^CAP_//p' | tr '[:upper:]' '[:lower:]' | sed 's/^/+/' | paste -sd,)
        run=(setpriv --no-new-privs "--bounding-set=-all,$caps" "${run[@]}")
    else
        # Not root: no chroot, no uid switch.
        sed -i 's/^use chroot = yes/use chroot = no/; /^uid = /d; /^gid = /d' "$conf"
    fi
    port=$(t_free_port) || return 1
    "${run[@]}" --daemon --no-detach --address=127.0.0.1 --port="$port" \
        --config="$conf" >"$T/pkgd.out" 2>&1 </dev/null &
    pid=$!
    t_track_pid "$pid"
    t_wait_port "$port" 10 "$pid" || { cat "$T/pkgd.out"; return 1; }
    "$RSYNC" "rsync://127.0.0.1:$port/" >"$T/list.out" 2>&1
    "$RSYNC" -a "rsync://127.0.0.1:$port/doc/" "$T/got/" >"$T/pull.out" 2>&1
    echo "pull: exit $?"
    cat "$T/list.out" "$T/pull.out"
    t_ferryd_stop "$pid"
    grep -q '^doc' "$T/list.out" && cmp "$X/usr/share/doc/ferry/ferryd.conf.example" "$T/got/ferryd.conf.example"
}
t_check deb_serves_its_module serve_packaged_module

t_done
