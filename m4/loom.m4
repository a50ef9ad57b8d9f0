# loom: small autoconf helpers.  (libtool drops its own macros next to this
# file when autogen.sh runs; those are generated and ignored by git.)

# LOOM_CHECK_CFLAG(VARIABLE, FLAG)
# ---------------------------------
# Appends FLAG to VARIABLE when the C compiler accepts it without a warning
# (gcc only warns about some unknown -W options, so -Werror is used for the test).
AC_DEFUN([LOOM_CHECK_CFLAG], [
    AC_MSG_CHECKING([whether $CC accepts $2])
    loom_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $2"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
        [AC_MSG_RESULT([yes]); $1="[$]$1 $2"],
        [AC_MSG_RESULT([no])])
    CFLAGS=$loom_save_CFLAGS
])
