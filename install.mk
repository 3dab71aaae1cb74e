# `make install` and `make uninstall`: atsproxy as a systemd service, with its manual pages and shell
# completions (docs/daemon.md, "Running under systemd").
#
#   make install                          release build, then install under PREFIX (/usr/local) and /etc
#   make install DESTDIR=/tmp/stage       the same tree under /tmp/stage, for packaging; nothing is run
#   make install INSTALL_FROM=DIR         install DIR/atsproxy and DIR/atsproxyctl without building
#                                         (e.g. `make release` as yourself, then
#                                         `sudo make install INSTALL_FROM=.build/release`)
#   make man                              the manual pages into .build/man (man -l .build/man/atsproxy.8)
#
# The manual pages and the completions are generated from the binaries being installed: the
# completions by swift-argument-parser (--generate-completion-script), the pages by
# scripts/manpage.py from --experimental-dump-help (python3; the script says why not the plugin).
# atsproxy is a daemon, section 8; atsproxyctl section 1, with a page per subcommand.
#
# Configuration always goes to /etc/atsproxy: the unit names that path, and ConfigurationDirectory=
# is relative to /etc whatever the PREFIX.

DESTDIR      ?=
BINDIR       ?= $(PREFIX)/bin
# systemd reads units, sysusers.d and tmpfiles.d files under /usr/local/lib and /usr/lib, but not
# under other prefixes: for those, the administrator's directories in /etc.
ifneq ($(filter /usr /usr/local,$(PREFIX)),)
UNITDIR      ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR  ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR  ?= $(PREFIX)/lib/tmpfiles.d
else
UNITDIR      ?= /etc/systemd/system
SYSUSERSDIR  ?= /etc/sysusers.d
TMPFILESDIR  ?= /etc/tmpfiles.d
endif
CONFDIR      := /etc/atsproxy
MANDIR       ?= $(PREFIX)/share/man
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR   ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR  ?= $(PREFIX)/share/fish/vendor_completions.d
MANPAGE      := python3 scripts/manpage.py
LOGROTATEDIR ?= /etc/logrotate.d
INSTALL_FROM ?=

# The unit and the logrotate snippet name /usr/local/bin; installed, they name BINDIR.
SUBSTITUTE_BINDIR := sed -e 's|/usr/local/bin/|$(BINDIR)/|g'

install: $(if $(INSTALL_FROM),,release)
	@from="$(INSTALL_FROM)"; [ -n "$$from" ] || from="$$($(SWIFT) build -c release --show-bin-path)"; \
	set -e; \
	install -d -m 0755 "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(SYSUSERSDIR)" \
	  "$(DESTDIR)$(TMPFILESDIR)" "$(DESTDIR)$(CONFDIR)" "$(DESTDIR)$(LOGROTATEDIR)"; \
	install -m 0755 "$$from/atsproxy" "$$from/atsproxyctl" "$(DESTDIR)$(BINDIR)/"; \
	install -d -m 0755 "$(DESTDIR)$(MANDIR)/man8" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPDIR)" \
	  "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"; \
	$(MANPAGE) --section 8 --output-directory "$(DESTDIR)$(MANDIR)/man8" "$$from/atsproxy" >/dev/null; \
	$(MANPAGE) --section 1 --output-directory "$(DESTDIR)$(MANDIR)/man1" "$$from/atsproxyctl" >/dev/null; \
	chmod 0644 "$(DESTDIR)$(MANDIR)/man8/atsproxy.8" "$(DESTDIR)$(MANDIR)/man1/"atsproxyctl*.1; \
	for tool in atsproxy atsproxyctl; do \
	  "$$from/$$tool" --generate-completion-script bash > "$(DESTDIR)$(BASHCOMPDIR)/$$tool"; \
	  "$$from/$$tool" --generate-completion-script zsh > "$(DESTDIR)$(ZSHCOMPDIR)/_$$tool"; \
	  "$$from/$$tool" --generate-completion-script fish > "$(DESTDIR)$(FISHCOMPDIR)/$$tool.fish"; \
	  chmod 0644 "$(DESTDIR)$(BASHCOMPDIR)/$$tool" "$(DESTDIR)$(ZSHCOMPDIR)/_$$tool" "$(DESTDIR)$(FISHCOMPDIR)/$$tool.fish"; \
	done; \
	$(SUBSTITUTE_BINDIR) systemd/atsproxy.service > "$(DESTDIR)$(UNITDIR)/atsproxy.service"; \
	chmod 0644 "$(DESTDIR)$(UNITDIR)/atsproxy.service"; \
	install -m 0644 systemd/atsproxy.sysusers "$(DESTDIR)$(SYSUSERSDIR)/atsproxy.conf"; \
	install -m 0644 systemd/atsproxy.tmpfiles "$(DESTDIR)$(TMPFILESDIR)/atsproxy.conf"; \
	$(SUBSTITUTE_BINDIR) config/atsproxy.logrotate > "$(DESTDIR)$(LOGROTATEDIR)/atsproxy"; \
	chmod 0644 "$(DESTDIR)$(LOGROTATEDIR)/atsproxy"; \
	for file in atsproxy.conf ats-defaults.plist; do \
	  if [ ! -f "config/$$file" ]; then \
	    echo "install: config/$$file is not in this tree: not installed"; \
	  elif [ -e "$(DESTDIR)$(CONFDIR)/$$file" ] && ! cmp -s "config/$$file" "$(DESTDIR)$(CONFDIR)/$$file"; then \
	    install -m 0644 "config/$$file" "$(DESTDIR)$(CONFDIR)/$$file.new"; \
	    echo "install: kept your $(DESTDIR)$(CONFDIR)/$$file; the shipped one is $(DESTDIR)$(CONFDIR)/$$file.new"; \
	  else \
	    install -m 0644 "config/$$file" "$(DESTDIR)$(CONFDIR)/$$file"; \
	  fi; \
	done
	@if [ -z "$(DESTDIR)" ]; then \
	  if command -v systemd-sysusers >/dev/null 2>&1; then systemd-sysusers "$(SYSUSERSDIR)/atsproxy.conf"; \
	  else echo "install: no systemd-sysusers: create the system user and group atsproxy yourself" >&2; fi; \
	  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	  echo "install: done; start it with: systemctl enable --now atsproxy"; \
	fi

# Removes what install put in place except /etc/atsproxy (your configuration and policy) and the
# atsproxy user, which may still own files in /var/lib/atsproxy and /var/log/atsproxy.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl disable --now atsproxy.service || true; fi
	rm -f "$(DESTDIR)$(BINDIR)/atsproxy" "$(DESTDIR)$(BINDIR)/atsproxyctl" \
	  "$(DESTDIR)$(UNITDIR)/atsproxy.service" "$(DESTDIR)$(SYSUSERSDIR)/atsproxy.conf" \
	  "$(DESTDIR)$(TMPFILESDIR)/atsproxy.conf" \
	  "$(DESTDIR)$(LOGROTATEDIR)/atsproxy" \
	  "$(DESTDIR)$(MANDIR)/man8/atsproxy.8" "$(DESTDIR)$(MANDIR)/man1/"atsproxyctl.1 "$(DESTDIR)$(MANDIR)/man1/"atsproxyctl-*.1 \
	  "$(DESTDIR)$(BASHCOMPDIR)/atsproxy" "$(DESTDIR)$(BASHCOMPDIR)/atsproxyctl" \
	  "$(DESTDIR)$(ZSHCOMPDIR)/_atsproxy" "$(DESTDIR)$(ZSHCOMPDIR)/_atsproxyctl" \
	  "$(DESTDIR)$(FISHCOMPDIR)/atsproxy.fish" "$(DESTDIR)$(FISHCOMPDIR)/atsproxyctl.fish"
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	@echo "uninstall: left $(DESTDIR)$(CONFDIR) and the atsproxy user in place"

# The manual pages, to read before installing: man -l .build/man/atsproxy.8
.PHONY: man
man: $(if $(INSTALL_FROM),,release)
	@from="$(INSTALL_FROM)"; [ -n "$$from" ] || from="$$($(SWIFT) build -c release --show-bin-path)"; \
	set -e; \
	$(MANPAGE) --section 8 --output-directory .build/man "$$from/atsproxy"; \
	$(MANPAGE) --section 1 --output-directory .build/man "$$from/atsproxyctl"
