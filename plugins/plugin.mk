# Shared rules for in-tree plugins: include from each plugin's Makefile.am
# after setting pkglib_LTLIBRARIES = dt_<kind>_<name>.la.
AM_CPPFLAGS = -I$(top_srcdir)/include -I$(top_builddir)
AM_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden -pthread
# -Wl,--no-undefined: a plugin that calls a libdt function libdt does not
# export (one that no installed header declares, core/libdt.sym) fails to
# link, naming the symbol, instead of failing when a job loads it.
AM_LDFLAGS = -module -avoid-version -shared -no-undefined -Wl,--no-undefined
PLUGIN_LIBDT = $(top_builddir)/core/libdt.la

# Link each built module into plugins/modules so an uninstalled dtctl (and
# the tests) find every plugin in one directory. The link is replaced only
# when it changes, and then atomically (rename): `make install` during
# `make check` reruns this while tests scan the directory.
all-local:
	@$(MKDIR_P) $(top_builddir)/plugins/modules
	@for la in $(pkglib_LTLIBRARIES); do \
	  so=$${la%.la}.so; target="$(abs_builddir)/.libs/$$so"; \
	  link="$(top_builddir)/plugins/modules/$$so"; \
	  test "`readlink "$$link" 2>/dev/null`" = "$$target" && continue; \
	  ln -sf "$$target" "$$link.tmp$$$$" && mv -Tf "$$link.tmp$$$$" "$$link"; \
	done

clean-local:
	@for la in $(pkglib_LTLIBRARIES); do \
	  rm -f "$(top_builddir)/plugins/modules/$${la%.la}.so"; \
	done
