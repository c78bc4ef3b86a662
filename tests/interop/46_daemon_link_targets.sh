#!/bin/bash
# A daemon module without chroot keeps received symlink targets inside the
# transfer: rsync's daemon sanitizes them (sanitize_paths: leading "/"
# and ".." that climb above the link's own depth go), unless it munges
# them. The same links pushed by the real rsync client into a real rsync
# daemon and into a ferry daemon must come out the same; a chrooted module
# keeps them as sent.
set -u
. "$(dirname "$0")/lib.sh"
t_setup
t_require rsync

mkdir -p "$T/src/a/b"
mk() { ln -s "$1" "$T/src/$2"; }
mk ../up0 top_up
mk ../../up2 top_up2
mk /etc/passwd top_abs
mk ./here/./x top_dots
mk a/../../b top_mid
mk ../sib a/up1
mk ../../root a/up2
mk ../../../over a/up3
mk ../x/../../y a/zig
mk //double//slash a/abs2
mk ../../c a/b/up2
mk ../../../d a/b/up3
mk .. a/dotdot
mk . a/dot

for who in rsyncd ferryd; do
    mkdir -p "$T/mod-$who" "$T/modc-$who"
    body="[m]
path = $T/mod-$who
read only = no
munge symlinks = no
[c]
path = $T/modc-$who
read only = no
use chroot = yes
munge symlinks = no"
    if [ "$who" = rsyncd ]; then
        t_rsyncd_start rd "$body" || { t_fail "${who}_start" "no daemon"; continue; }
        port=$RSYNCD_PORT
    else
        t_ferryd_start fd "$body" || { t_fail "${who}_start" "no daemon"; continue; }
        port=$FERRYD_PORT
    fi
    "$RSYNC" -rl "$T/src/" "rsync://127.0.0.1:$port/m/" >"$T/$who.out" 2>&1
    t_check "${who}_push_rc" test $? -eq 0
    if [ "$(id -u)" = 0 ]; then
        "$RSYNC" -rl "$T/src/" "rsync://127.0.0.1:$port/c/" >"$T/$who.c.out" 2>&1
        t_check "${who}_chroot_push_rc" test $? -eq 0
    fi
    (cd "$T/mod-$who" && find . -type l | sort | while read -r l; do
        printf '%s -> %s\n' "$l" "$(readlink "$l")"; done) >"$T/$who.links"
    (cd "$T/modc-$who" && find . -type l | sort | while read -r l; do
        printf '%s -> %s\n' "$l" "$(readlink "$l")"; done) >"$T/$who.clinks"
    if [ "$who" = rsyncd ]; then t_rsyncd_stop; else t_ferryd_stop; fi
done
cat "$T/rsyncd.links"
t_check links_sanitized_as_rsync diff -u "$T/rsyncd.links" "$T/ferryd.links"
t_check sanitized_something grep -q "top_up -> up0" "$T/ferryd.links"
if [ "$(id -u)" = 0 ]; then
    t_check chroot_links_as_rsync diff -u "$T/rsyncd.clinks" "$T/ferryd.clinks"
    t_check chroot_links_kept grep -q "top_up -> ../up0" "$T/ferryd.clinks"
else
    t_skip chroot_links "chroot needs root"
fi
t_done
