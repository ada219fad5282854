# install.mk - `make install` and `make uninstall` (GNU conventions: PREFIX, DESTDIR).
#
#   make && sudo make install                  # into /usr/local
#   make install PREFIX=/usr DESTDIR=/tmp/pkg  # staged, for a package
#
# carve finds its libraries at ../lib/carve beside its executable (or CARVE_LIBDIR), so the
# tree is the build's own: bin/ and lib/carve/ as in build/. carved.service gets the path of
# the installed carved. Nothing is written under /etc: carved runs on built-in defaults until
# an admin puts a config at /etc/carve/carved.conf (share/carve/carved.conf.example).

PREFIX         ?= /usr/local
DESTDIR        ?=
INST_BIN       := $(DESTDIR)$(PREFIX)/bin
INST_LIB       := $(DESTDIR)$(PREFIX)/lib/carve
INST_MAN       := $(DESTDIR)$(PREFIX)/share/man
INST_SHARE     := $(DESTDIR)$(PREFIX)/share/carve
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
INST_UNIT      := $(DESTDIR)$(SYSTEMD_UNITDIR)
# bash-completion loads a command's completion from a file named after it: carved's is carve's
INST_COMPLETION := $(DESTDIR)$(PREFIX)/share/bash-completion/completions

INSTALL_PROGRAMS := carve carved carve-slurm-cleanup
# what lib/carve holds, relative to it; carve-dynamic exists where bin/carve is static and
# spank_carve.so where Slurm's header was found (cli/module.mk, slurm/module.mk)
INSTALL_LIBS     := libcarve.so carve-top sim/libcuda.so.1 sim/libnvidia-ml.so.1 \
                    sim/bin/nvidia-smi sim/bin/nvidia-cuda-mps-control sim/bin/nvidia-cuda-mps-server
INSTALL_LIBS_IF  := carve-dynamic spank_carve.so
INSTALL_LINKS    := sim/libcuda.so sim/libnvidia-ml.so
MAN_PAGES        := $(wildcard docs/man/*.[18])
# `man carve-ps' finds the page that documents carve ps
MAN_ALIASES      := carve-ps.1:carve-slice.1
INSTALL_SHARE    := carved/carved.conf.example carved/grafana-dashboard.json \
                    carved/prometheus-alerts.yml

# The paths are not quoted in the recipes: one with a space ("/opt/my carve") would be two
# words, the second a directory made (or a file removed) relative to the checkout. Refused.
empty :=
install_space := $(empty) $(empty)
install_paths_ok = $(if $(findstring $(install_space),$(DESTDIR)$(PREFIX)$(SYSTEMD_UNITDIR)),\
	$(error DESTDIR, PREFIX and SYSTEMD_UNITDIR cannot hold a space: "$(DESTDIR)$(PREFIX)"))

.PHONY: install uninstall
install: product
	$(install_paths_ok)
	install -d $(INST_BIN) $(INST_LIB)/sim/bin $(INST_MAN)/man1 $(INST_MAN)/man8 \
		$(INST_SHARE) $(INST_UNIT) $(INST_COMPLETION)
	install -m 755 $(addprefix $(BIN)/,$(INSTALL_PROGRAMS)) $(INST_BIN)/
	for f in $(INSTALL_LIBS) $(INSTALL_LIBS_IF); do \
		if [ -e $(LIBDIR)/$$f ]; then install -m 755 $(LIBDIR)/$$f $(INST_LIB)/$$f || exit 1; \
		else rm -f $(INST_LIB)/$$f; fi; \
	done
	for f in $(INSTALL_LINKS); do ln -sf $$(basename $$f).1 $(INST_LIB)/$$f || exit 1; done
	for p in $(MAN_PAGES); do \
		install -m 644 $$p $(INST_MAN)/man$${p##*.}/ || exit 1; \
	done
	for a in $(MAN_ALIASES); do \
		echo ".so man1/$${a#*:}" >$(INST_MAN)/man1/$${a%%:*} && \
		chmod 644 $(INST_MAN)/man1/$${a%%:*} || exit 1; \
	done
	install -m 644 $(INSTALL_SHARE) $(INST_SHARE)/
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|g' carved/carved.service >$(INST_UNIT)/carved.service
	chmod 644 $(INST_UNIT)/carved.service
	install -m 644 cli/carve-completion.bash $(INST_COMPLETION)/carve
	ln -sf carve $(INST_COMPLETION)/carved

# Removes what install writes, and the directories of carve's own once they are empty.
uninstall:
	$(install_paths_ok)
	rm -f $(addprefix $(INST_BIN)/,$(INSTALL_PROGRAMS))
	rm -f $(addprefix $(INST_LIB)/,$(INSTALL_LIBS) $(INSTALL_LIBS_IF) $(INSTALL_LINKS))
	rm -f $(foreach p,$(MAN_PAGES),$(INST_MAN)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))
	rm -f $(foreach a,$(MAN_ALIASES),$(INST_MAN)/man1/$(firstword $(subst :, ,$(a))))
	rm -f $(addprefix $(INST_SHARE)/,$(notdir $(INSTALL_SHARE))) $(INST_UNIT)/carved.service
	rm -f $(INST_COMPLETION)/carve $(INST_COMPLETION)/carved
	rmdir $(INST_LIB)/sim/bin $(INST_LIB)/sim $(INST_LIB) $(INST_SHARE) 2>/dev/null || true
