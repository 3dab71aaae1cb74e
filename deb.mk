# `make deb`: atsproxy as a Debian package, atsproxy_VERSION_ARCH.deb in DEB_DIR, then lintian on it
# (docs/daemon.md, "The Debian package").
#
#   make deb                  release build, the package in this directory, lintian (errors and
#                             warnings fail the target)
#   make deb DEB_DIR=/tmp/x   the package in /tmp/x instead
#
# The binaries are a release build with the Swift runtime linked in (--static-swift-stdlib): Debian
# has no package of it, and the toolchain's copy is not on the machines the package goes to. They
# have a build directory of their own, DEB_SCRATCH, because the link flags differ from `make
# release`'s (about 9 minutes from clean on 2 cores, and only the packaging after that).
# --disable-local-rpath leaves out SwiftPM's RUNPATH $ORIGIN (nothing is loaded from beside the
# binary, and lintian's custom-library-search-path is an error); -z now completes the RELRO
# that Debian's hardening flags (dpkg-buildflags) give every package.
#
# The tree is `make install DESTDIR=… PREFIX=/usr` (install.mk has the file list), with zsh's
# completions where Debian's zsh looks for a package's (vendor-completions; site-functions is
# not in its fpath), then what a Debian package adds: binaries stripped as dh_strip strips them,
# bash completions without the #! line swift-argument-parser gives them (bash-completion sources
# them, and lintian's bash-completion-with-hashbang warns), manual pages compressed, copyright and changelog, and the control files in packaging/debian.
# The version is the one atsproxyctl --version prints (ATSProxyVersion.current); Depends is what
# dpkg-shlibdeps finds the binaries need, plus systemd-sysusers and systemd-tmpfiles for the
# postinst. dpkg-deb --root-owner-group makes every file root's without fakeroot.

DEB_SCRATCH  ?= .build/deb
DEB_DIR      ?= .
DEB_STAGE    := $(DEB_SCRATCH)/root
DEB_CONTROL  := packaging/debian
# xz at level 1: 37 MB instead of dpkg-deb's default level 6's 32 MB, for 26 s of CPU instead of
# 2 minutes (the payload is two 60-MB binaries, each with the Swift runtime and ICU's data).
DEB_COMPRESSION ?= -Zxz -z1
DEB_BUILD_FLAGS := -c release --force-resolved-versions --scratch-path $(DEB_SCRATCH) --static-swift-stdlib \
	--disable-local-rpath -Xlinker -z -Xlinker now
# What the postinst runs besides Essential packages, as debhelper's dh_installsysusers and
# dh_installtmpfiles state it: systemd, or a package with only that tool.
DEB_SYSTEMD_DEPENDS := systemd | systemd-standalone-sysusers | systemd-sysusers, \
	systemd | systemd-standalone-tmpfiles | systemd-tmpfiles

deb: deps
	$(SWIFT) build $(DEB_BUILD_FLAGS) --product atsproxy
	$(SWIFT) build $(DEB_BUILD_FLAGS) --product atsproxyctl
	@set -e; \
	bin="$$($(SWIFT) build $(DEB_BUILD_FLAGS) --show-bin-path)"; \
	version="$$("$$bin/atsproxyctl" --version)"; \
	arch="$$(dpkg --print-architecture)"; \
	stage="$(abspath $(DEB_STAGE))"; \
	deb="$(DEB_DIR)/atsproxy_$${version}_$${arch}.deb"; \
	rm -rf "$$stage"; \
	$(MAKE) --no-print-directory install DESTDIR="$$stage" PREFIX=/usr INSTALL_FROM="$$bin" \
	  ZSHCOMPDIR=/usr/share/zsh/vendor-completions >/dev/null; \
	sed -i '1{/^#!/d}' "$$stage"/usr/share/bash-completion/completions/*; \
	strip --remove-section=.comment --remove-section=.note "$$stage/usr/bin/atsproxy" "$$stage/usr/bin/atsproxyctl"; \
	gzip -9n "$$stage"/usr/share/man/man*/*; \
	doc="$$stage/usr/share/doc/atsproxy"; \
	install -d -m 0755 "$$doc" "$$stage/DEBIAN"; \
	install -m 0644 $(DEB_CONTROL)/copyright "$$doc/copyright"; \
	maintainer="$$(sed -n 's/^Maintainer: //p' $(DEB_CONTROL)/control.in)"; \
	date="$$(git log -1 --format=%aD 2>/dev/null || date -R)"; \
	{ echo "atsproxy ($$version) unstable; urgency=medium"; echo; \
	  echo "  * Built from the atsproxy repository: its history is the change log."; echo; \
	  echo " -- $$maintainer  $$date"; } | gzip -9n > "$$doc/changelog.gz"; \
	chmod 0644 "$$doc/changelog.gz"; \
	install -m 0755 $(DEB_CONTROL)/postinst $(DEB_CONTROL)/prerm $(DEB_CONTROL)/postrm "$$stage/DEBIAN/"; \
	(cd "$$stage" && find etc -type f | sed 's|^|/|' | sort) > "$$stage/DEBIAN/conffiles"; \
	(cd "$$stage" && find usr -type f | sort | xargs md5sum) > "$$stage/DEBIAN/md5sums"; \
	chmod 0644 "$$stage/DEBIAN/conffiles" "$$stage/DEBIAN/md5sums"; \
	shlibs="$$(scratch="$$(mktemp -d)"; trap 'rm -rf "$$scratch"' EXIT; mkdir "$$scratch/debian"; \
	  printf 'Source: atsproxy\n\nPackage: atsproxy\nArchitecture: any\n' > "$$scratch/debian/control"; \
	  cd "$$scratch" && dpkg-shlibdeps -O -e"$$stage/usr/bin/atsproxy" -e"$$stage/usr/bin/atsproxyctl" \
	  | sed -n 's/^shlibs:Depends=//p')"; \
	test -n "$$shlibs"; \
	size="$$(du -s -k --apparent-size --exclude=DEBIAN "$$stage" | cut -f1)"; \
	sed -e "s/@VERSION@/$$version/" -e "s/@ARCH@/$$arch/" -e "s/@INSTALLED_SIZE@/$$size/" \
	  -e "s/@DEPENDS@/$$shlibs, $(DEB_SYSTEMD_DEPENDS)/" $(DEB_CONTROL)/control.in > "$$stage/DEBIAN/control"; \
	chmod 0644 "$$stage/DEBIAN/control"; \
	mkdir -p "$(DEB_DIR)"; \
	dpkg-deb $(DEB_COMPRESSION) --root-owner-group --build "$$stage" "$$deb" >/dev/null; \
	echo "make: built $$deb; lintian:"; \
	lintian --fail-on error,warning "$$deb"; \
	echo "make: $$deb is lintian-clean (no error, no warning)"
