// A valid shared library without the plugin entry point (REG-3, REG-6).
extern "C" __attribute__((visibility("default"))) int emm_test_not_the_entry_point() { return 42; }
