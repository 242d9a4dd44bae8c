// emm/mocks/fake_system.hpp — the emmkit 0.1 path of emm/fake/fake_system.hpp (the fake driver left
// the mocks in 0.2.0: it is a backend, target emmkit::fake). Kept until 0.3.0 for plugins and tests
// written against 0.1; include <emm/fake/fake_system.hpp> instead (CHANGELOG.md).
#pragma once

#pragma GCC warning \
    "<emm/mocks/fake_system.hpp> is the emmkit 0.1 path, removed in 0.3.0: include <emm/fake/fake_system.hpp> (see CHANGELOG.md)"

#include "emm/fake/fake_system.hpp"
