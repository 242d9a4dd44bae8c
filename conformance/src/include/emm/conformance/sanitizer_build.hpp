// emm/conformance/sanitizer_build.hpp — whether the kit itself was built with a sanitizer
// runtime (GCC defines __SANITIZE_*__, Clang answers __has_feature). Such a build runs children
// without a data-segment limit (the runtime's shadow memory counts against it) and gives a NEP 49
// sequence longer to show progress (every synchronisation is slower under ThreadSanitizer).
#pragma once

namespace emm::conformance {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizerBuild = true;
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizerBuild = true;
#else
inline constexpr bool kThreadSanitizerBuild = false;
#endif
#else
inline constexpr bool kThreadSanitizerBuild = false;
#endif

inline constexpr bool kSanitizerBuild = kAddressSanitizerBuild || kThreadSanitizerBuild;

}  // namespace emm::conformance
