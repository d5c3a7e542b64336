/*
 * lsan.c: the unit tests' leak check under SANITIZE=1, linked into every
 * test program.  atf-c leaks while it lists its test cases, which is no
 * leak of the code under test; and kyua calls a test program broken if
 * listing writes to stderr, so the suppressions are not printed.
 */

const char	*__lsan_default_suppressions(void);
const char	*__lsan_default_options(void);

const char *
__lsan_default_suppressions(void)
{
	return ("leak:libatf-c.so\n");
}

const char *
__lsan_default_options(void)
{
	return ("print_suppressions=0");
}
