#!/bin/sh
# Install what building (and, with "test", testing) ferry needs, Debian 12
# package names. Usage: build-aux/deps.sh build|test
#
# Each need is "package probe": the probe (a pkg-config module, a command,
# or a file glob) says whether it is met without asking dpkg, so a machine
# with the libraries but no dpkg-query (another distribution, a source
# build) passes; where the probe fails, dpkg's status counts too. Only what
# is missing is installed, with apt-get, as root.
set -u

BUILD_NEEDS='
gcc               cmd:cc
make              cmd:make
pkg-config        cmd:pkg-config
libssh-dev        pc:libssh
zlib1g-dev        pc:zlib
libxxhash-dev     pc:libxxhash
libbsd-dev        pc:libbsd-overlay
libmd-dev         pc:libmd
libzstd-dev       pc:libzstd
liblz4-dev        pc:liblz4
'
TEST_NEEDS='
libcmocka-dev      pc:cmocka
rsync              cmd:rsync
openssh-server     file:/usr/sbin/sshd
openssh-client     cmd:ssh
python3            cmd:python3
procps             cmd:ps
iproute2           cmd:ss
strace             cmd:strace
postgresql         file:/usr/lib/postgresql/*/bin/initdb
postgresql-contrib file:/usr/lib/postgresql/*/lib/pg_stat_statements.so
acl                cmd:setfacl
attr               cmd:setfattr
debhelper          cmd:dh
lintian            cmd:lintian
'

# probe_met PROBE: true when the probe finds the need met on this machine.
probe_met() {
	case $1 in
	pc:*) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "${1#pc:}" ;;
	cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
	file:*) for f in ${1#file:}; do [ -e "$f" ] && return 0; done; return 1 ;;
	*) return 1 ;;
	esac
}

# dpkg_installed PACKAGE: true when dpkg-query exists and says installed.
dpkg_installed() {
	command -v dpkg-query >/dev/null 2>&1 &&
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

case ${1:-} in
build) needs=$BUILD_NEEDS ;;
test) needs="$BUILD_NEEDS$TEST_NEEDS" ;;
*) echo "usage: $0 build|test" >&2; exit 2 ;;
esac

missing=
while read -r pkg probe; do
	[ -n "$pkg" ] || continue
	probe_met "$probe" || dpkg_installed "$pkg" || missing="$missing $pkg"
done <<END
$needs
END

[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
	echo "make deps: missing:$missing (Debian package names; install them" \
	     "with this system's package manager)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "make deps: need root to install:$missing" >&2
	exit 1
fi
echo "installing:$missing"
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
