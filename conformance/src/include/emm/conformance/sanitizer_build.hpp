// emm/conformance/sanitizer_build.hpp — whether the kit itself was built with a sanitizer
// runtime (GCC defines __SANITIZE_*__, Clang answers __has_feature). Such a build runs children
// without a data-segment limit (the runtime's shadow memory counts against it) and gives a NEP 49
// sequence longer to show progress (every synchronisation is slower under ThreadSanitizer).
#pragma once

#if defined(__has_feature)
#define EMM_SANITIZER_FEATURE(name) __has_feature(name)
#else
#define EMM_SANITIZER_FEATURE(name) 0
#endif

namespace emm::conformance {

inline constexpr bool kAddressSanitizerBuild =
#if defined(__SANITIZE_ADDRESS__) || EMM_SANITIZER_FEATURE(address_sanitizer)
    true;
#else
    false;
#endif

inline constexpr bool kThreadSanitizerBuild =
#if defined(__SANITIZE_THREAD__) || EMM_SANITIZER_FEATURE(thread_sanitizer)
    true;
#else
    false;
#endif

inline constexpr bool kSanitizerBuild = kAddressSanitizerBuild || kThreadSanitizerBuild;

}  // namespace emm::conformance

#undef EMM_SANITIZER_FEATURE
