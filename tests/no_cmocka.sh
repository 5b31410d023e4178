#!/bin/sh
# Run only when configure found no cmocka: the unit tests (test_*) are not
# built, and this SKIP says so in make check's summary.
echo "SKIP: the unit tests need cmocka, which configure did not find" \
    "(Debian: apt-get install libcmocka-dev, then rerun configure)"
exit 77
