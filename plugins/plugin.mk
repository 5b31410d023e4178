# Shared rules for in-tree plugins: include from each plugin's Makefile.am
# after setting pkglib_LTLIBRARIES = dt_<kind>_<name>.la.
AM_CPPFLAGS = -I$(top_srcdir)/include -I$(top_builddir)
AM_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden -pthread
AM_LDFLAGS = -module -avoid-version -shared -no-undefined
PLUGIN_LIBDT = $(top_builddir)/core/libdt.la

# Link each built module into plugins/modules so an uninstalled dtctl (and
# the tests) find every plugin in one directory.
all-local:
	@$(MKDIR_P) $(top_builddir)/plugins/modules
	@for la in $(pkglib_LTLIBRARIES); do \
	  so=$${la%.la}.so; \
	  ln -sf "$(abs_builddir)/.libs/$$so" "$(top_builddir)/plugins/modules/$$so"; \
	done

clean-local:
	@for la in $(pkglib_LTLIBRARIES); do \
	  rm -f "$(top_builddir)/plugins/modules/$${la%.la}.so"; \
	done
