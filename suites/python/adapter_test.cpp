// The adapter (python/include/emm/python/python_memory_manager.hpp) on what needs no GPU: a
// Python plugin built with context=None, its calls forwarded, its pointers' lifetime, its
// exceptions mapped by meaning, its IPC handles and guards converted. emm_test_adapter.py is
// the plugin; its `events` list shows what Python saw.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pybind11/pybind11.h>

#include "emm/conformance/testing/expect_throw.hpp"
#include "emm/diagnostics.hpp"
#include "emm/python/gil.hpp"
#include "emm/python/interpreter.hpp"
#include "emm/python/python_memory_manager.hpp"
#include "emm/python/python_pointer.hpp"
#include "emm/python/unraisable_diagnostics.hpp"

namespace py = pybind11;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace emm::python {
namespace {

class Adapter : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ensure_interpreter();
    Gil gil;
    py::module_::import("sys").attr("path").attr("insert")(0, EMM_TEST_PYTHON_MODULES);
    plugin_ = new PythonPlugin(load_python_plugin("emm_test_adapter:Recording", std::nullopt));
    route_unraisable_to_diagnostics();
  }
  void SetUp() override {
    manager_ = std::make_unique<PythonMemoryManager>(*plugin_, nullptr);
    Gil gil;
    events().attr("clear")();
  }
  void TearDown() override { manager_.reset(); }

  static py::object events() { return py::module_::import("emm_test_adapter").attr("events"); }
  static std::string events_text() {
    Gil gil;
    return py::repr(events()).cast<std::string>();
  }

  static PythonPlugin* plugin_;
  std::unique_ptr<PythonMemoryManager> manager_;
};
PythonPlugin* Adapter::plugin_ = nullptr;

TEST_F(Adapter, DescribesTheClassAndWhereItsCapabilitiesCameFrom) {
  EXPECT_EQ(
      plugin_->name,
      "python emm_test_adapter:Recording (capabilities: class attribute emmkit_capabilities)");
  EXPECT_TRUE(plugin_->capabilities.memory_info);
  EXPECT_TRUE(plugin_->capabilities.ipc);
  EXPECT_FALSE(plugin_->capabilities.runs_on_fake_driver);
  EXPECT_FALSE(plugin_->capabilities.host_only_derived);  // derived from BaseCUDAMemoryManager
  EXPECT_EQ(plugin_->defer_cleanup_behaviour, "");
}

TEST_F(Adapter, CapabilityListsAreCheckedByName) {
  EXPECT_TRUE(parse_capability_list("ipc,thread_safe").thread_safe);
  EXPECT_EQ(parse_capability_list("none"), parse_capability_list(""));
  EMM_EXPECT_THROW(PythonPluginError, parse_capability_list("ipc,warp_drive"),
                   StartsWith("--capabilities names 'warp_drive', which is not a capability; use "
                              "some of: memory_info, ipc, thread_safe, pooling"));
}

// Spec §8: a class that declares no capabilities has memory_info and ipc inferred from what it
// overrides (emm_test_managers.py), and its name on the certificate says they were inferred.
class InferredCapabilities : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ensure_interpreter();
    Gil gil;
    py::module_::import("sys").attr("path").attr("insert")(0, EMM_TEST_PYTHON_MODULES);
  }
  // The capabilities a Python plugin cannot declare (runs_on_fake_driver false; every class of
  // emm_test_managers derives numba's HostOnlyCUDAMemoryManager) plus `names`.
  static Capabilities only(std::initializer_list<bool Capabilities::*> names) {
    Capabilities capabilities;
    capabilities.runs_on_fake_driver = false;
    capabilities.host_only_derived = true;
    for (bool Capabilities::*name : names) capabilities.*name = true;
    return capabilities;
  }
  static std::string declared_names(const Capabilities& capabilities) {
    std::string names;
    for (const CapabilityField& field : kCapabilityFields) {
      if (declared(capabilities, field))
        names += (names.empty() ? "" : " ") + std::string(field.name);
    }
    return names;
  }
};

TEST_F(InferredCapabilities, AnOverriddenGetMemoryInfoAndGetIpcHandleMixinInferBoth) {
  Gil gil;
  const PythonPlugin plugin =
      load_python_plugin("emm_test_managers:InfersMemoryInfoAndIpc", std::nullopt);
  EXPECT_EQ(plugin.capabilities_source, "inferred: get_memory_info overridden, GetIpcHandleMixin");
  EXPECT_EQ(plugin.name,
            "python emm_test_managers:InfersMemoryInfoAndIpc (capabilities: inferred: "
            "get_memory_info overridden, GetIpcHandleMixin)");
  EXPECT_EQ(declared_names(plugin.capabilities), "memory_info ipc host_only_derived");
  EXPECT_EQ(plugin.capabilities, only({&Capabilities::memory_info, &Capabilities::ipc}));
  EXPECT_STREQ(plugin.declaration().name, plugin.name.c_str());
}

TEST_F(InferredCapabilities, AMethodThatOnlyRaisesNotImplementedErrorIsNotAnOverride) {
  Gil gil;
  const PythonPlugin plugin =
      load_python_plugin("emm_test_managers:InfersIpcLikeRmm", std::nullopt);
  EXPECT_EQ(plugin.name,
            "python emm_test_managers:InfersIpcLikeRmm (capabilities: inferred: get_memory_info "
            "raises NotImplementedError, get_ipc_handle overridden)");
  EXPECT_EQ(declared_names(plugin.capabilities), "ipc host_only_derived");
  EXPECT_EQ(plugin.capabilities, only({&Capabilities::ipc}));
}

TEST_F(InferredCapabilities, AStubHidesGetIpcHandleMixinsMethod) {
  Gil gil;
  const PythonPlugin plugin =
      load_python_plugin("emm_test_managers:InfersNothingFromStubs", std::nullopt);
  EXPECT_EQ(plugin.capabilities_source,
            "inferred: get_memory_info raises NotImplementedError, get_ipc_handle raises "
            "NotImplementedError");
  EXPECT_EQ(declared_names(plugin.capabilities), "host_only_derived");
  EXPECT_EQ(plugin.capabilities, only({}));
}

TEST_F(InferredCapabilities, NumbasAbstractMethodsInferNothing) {
  Gil gil;
  const PythonPlugin plugin =
      load_python_plugin("emm_test_managers:OverridesNothing", std::nullopt);
  EXPECT_EQ(plugin.name,
            "python emm_test_managers:OverridesNothing (capabilities: inferred: nothing "
            "overridden)");
  EXPECT_EQ(plugin.capabilities, only({}));
}

TEST_F(InferredCapabilities, TheCapabilitiesOptionAndTheClassAttributeWinOverInference) {
  Gil gil;
  const PythonPlugin overridden =
      load_python_plugin("emm_test_managers:InfersMemoryInfoAndIpc", "thread_safe");
  EXPECT_EQ(overridden.capabilities_source, "--capabilities");
  EXPECT_EQ(overridden.capabilities, only({&Capabilities::thread_safe}));
  const PythonPlugin declared = load_python_plugin("emm_test_managers:WellFormed", std::nullopt);
  EXPECT_EQ(declared.capabilities_source, "class attribute emmkit_capabilities");
  EXPECT_EQ(declared.capabilities, only({&Capabilities::memory_info, &Capabilities::ipc}));
}

TEST_F(Adapter, ForwardsTheLifecycleCalls) {
  EXPECT_EQ(manager_->interface_version(), 1);
  manager_->reset();
  manager_->initialize();
  manager_->initialize();
  EXPECT_EQ(events_text(), "['reset', 'initialize', 'initialize']");
  EXPECT_EQ(manager_->get_memory_info(), (MemoryInfo{100, 200}));
}

TEST_F(Adapter, APointerLivesAsLongAsItsLastCxxReference) {
  auto memory = manager_->memalloc(64);
  EXPECT_EQ(memory->device_pointer() & 0xffffffffu, 0x100000u + 64u * 0x1000u);
  EXPECT_EQ(memory->size(), 64u);
  EXPECT_EQ(memory->refct(), 1);  // AutoFreePointer(...).own(), as Python counts it
  {
    auto owned = memory->own();
    EXPECT_EQ(memory->refct(), 2);  // the Python own() counts too
    auto view = memory->view(16);
    EXPECT_EQ(view->device_pointer(), memory->device_pointer() + 16);
  }
  EXPECT_EQ(memory->refct(), 1);
  EXPECT_EQ(events_text(), "[]");
  memory.reset();
  EXPECT_EQ(events_text(), "[('freed', 64)]");  // Python's finalizer, exactly once
}

TEST_F(Adapter, ABareAutoFreePointerShowsRefctZero) {
  auto memory = manager_->memalloc(17);
  EXPECT_EQ(memory->refct(), 0);
}

TEST_F(Adapter, OutOfMemoryBecomesTheDriverError) {
  EMM_EXPECT_DRIVER_ERROR(manager_->memalloc(std::size_t{1} << 50), CUDA_ERROR_OUT_OF_MEMORY,
                          "memalloc(1125899906842624) (Python plugin)",
                          AllOf(HasSubstr("CudaAPIError: [2] Call to cuMemAlloc results in "
                                          "CUDA_ERROR_OUT_OF_MEMORY"),
                                HasSubstr("raised as numba."), HasSubstr("in memalloc")));
}

TEST_F(Adapter, OtherDriverErrorsKeepTheirPythonTypeAndTraceback) {
  const auto error =
      EMM_EXPECT_THROW(PythonError, manager_->memalloc(19),
                       AllOf(StartsWith("memalloc(19) raised numba."),
                             HasSubstr("CudaAPIError: [1] Call to cuMemAlloc results in "
                                       "CUDA_ERROR_INVALID_VALUE\nTraceback")));
  if (error) {
    EXPECT_THAT(error->traceback(), HasSubstr("emm_test_adapter.py"));
  }
}

TEST_F(Adapter, AnyOtherExceptionCarriesTypeMessageAndTraceback) {
  const auto error =
      EMM_EXPECT_THROW(PythonError, manager_->memalloc(13),
                       AllOf(StartsWith("memalloc(13) raised ValueError: thirteen is unlucky\n"
                                        "Traceback (most recent call last):\n"),
                             HasSubstr(", in memalloc\n")));
  if (error) {
    EXPECT_EQ(error->type_name(), "ValueError");
  }
}

TEST_F(Adapter, NotImplementedErrorBecomesTheKitsNotImplementedError) {
  EMM_EXPECT_THROW(NotImplementedError, manager_->memalloc(14),
                   StartsWith("memalloc(14) raised NotImplementedError: no device memory here"));
  EMM_EXPECT_THROW(NotImplementedError, manager_->memhostalloc(4096, false, false, false),
                   StartsWith("memhostalloc(4096, mapped=False, portable=False, wc=False) raised "
                              "NotImplementedError: no host memory here"));
}

TEST_F(Adapter, ReturnedValuesNumbaCannotUseAreNamedByType) {
  EMM_EXPECT_THROW(PythonPluginError, manager_->memalloc(15),
                   "memalloc(15) returned a object without a device_pointer; return a numba "
                   "MemoryPointer (or AutoFreePointer(...).own())");
  EMM_EXPECT_THROW(PythonPluginError, manager_->memalloc(16),
                   StartsWith("memalloc(16) returned a emm_test_adapter._StrPointer whose "
                              "device_pointer is a str"));
}

TEST_F(Adapter, IpcHandlesCarryTheBytesOffsetSizeAndSourceInfo) {
  auto memory = manager_->memalloc(4096);
  const IpcHandle handle = manager_->get_ipc_handle(memory);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(handle.handle().reserved[i], static_cast<char>(i));
  EXPECT_EQ(handle.size(), 4096u);
  EXPECT_EQ(handle.offset(), 5u);
  ASSERT_TRUE(handle.source_info().has_value());
  EXPECT_EQ(*handle.source_info(), (DeviceIdentity{1, 2, 3}));
  // A view reaches Python as numba's view() of the allocation.
  auto view = memory->view(256, 1024);
  (void)manager_->get_ipc_handle(view);
  const std::string base = std::to_string(memory->device_pointer());
  EXPECT_EQ(events_text(), "[('ipc', " + base + ", 4096), ('ipc', " +
                               std::to_string(memory->device_pointer() + 256) + ", 768)]");
}

TEST_F(Adapter, DeferCleanupHoldsTheContextManagerForTheGuardsLifetime) {
  {
    CleanupGuard outer = manager_->defer_cleanup();
    {
      CleanupGuard inner = manager_->defer_cleanup();
      EXPECT_EQ(events_text(), "['enter', 'enter']");
    }
    EXPECT_EQ(events_text(), "['enter', 'enter', 'exit']");
  }
  EXPECT_EQ(events_text(), "['enter', 'enter', 'exit', 'exit']");
}

TEST_F(Adapter, AFinalizerThatRaisesIsReportedNotThrown) {
  Diagnostics::Capture capture;
  auto memory = manager_->memalloc(18);
  EXPECT_NO_THROW(memory.reset());
  const std::vector<DiagnosticEvent> seen = capture.events();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, DiagnosticEvent::Kind::ignored_exception);
  EXPECT_THAT(seen[0].where, StartsWith("Python finalizer ("));
  EXPECT_THAT(seen[0].message, HasSubstr("raised RuntimeError: the finalizer of 18 bytes failed"));
}

TEST_F(Adapter, CallsFromManyThreadsTakeTheGilEachTime) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < 200; ++i) {
        auto memory = manager_->memalloc(64 + static_cast<std::size_t>(i % 4));
        EXPECT_GE(memory->refct(), 1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(holds_gil());
  Gil gil;
  EXPECT_EQ(py::len(events()), 1600u);
}

// A class derived from numba's HostOnlyCUDAMemoryManager has a HostOnly base the HostOnly
// clauses and the host's flush point read through emm::HostOnlyState: numba's `allocations`
// and `deallocations` (LIFE-10, DEFER-3, spec §2.4).
TEST(PythonHostOnlyBase, IsReadFromNumbasAllocationsAndDeallocations) {
  ensure_interpreter();
  std::unique_ptr<PythonPlugin> plugin;
  {
    Gil gil;
    py::module_::import("sys").attr("path").attr("insert")(0, EMM_TEST_PYTHON_MODULES);
    plugin = std::make_unique<PythonPlugin>(
        load_python_plugin("emm_test_adapter:QueuedFrees", std::nullopt));
  }
  EXPECT_TRUE(plugin->capabilities.host_only_derived);
  PythonMemoryManager manager(*plugin, nullptr);
  {
    Gil gil;
    py::module_::import("emm_test_adapter").attr("events").attr("clear")();
  }
  const HostOnlyState& state = manager;
  ASSERT_TRUE(state.has_host_only_base());
  auto memory = manager.memalloc(96);
  EXPECT_EQ(state.tracked_allocations(), 1u);
  EXPECT_EQ(state.pending_frees(), 0u);
  memory.reset();
  EXPECT_EQ(state.tracked_allocations(), 0u);
  EXPECT_EQ(state.pending_frees(), 1u);
  {
    CleanupGuard guard = manager.defer_cleanup();
    EXPECT_TRUE(state.deferring());
    manager.flush();  // numba's clear() does nothing while deferring
    EXPECT_EQ(state.pending_frees(), 1u);
  }
  EXPECT_FALSE(state.deferring());
  manager.flush();
  EXPECT_EQ(state.pending_frees(), 0u);
  Gil gil;
  EXPECT_EQ(py::repr(py::module_::import("emm_test_adapter").attr("events")).cast<std::string>(),
            "[('freed', 96)]");
}

TEST(PythonHostOnlyBase, AClassNotDerivedFromHostOnlyHasNone) {
  ensure_interpreter();
  Gil gil;
  py::module_::import("sys").attr("path").attr("insert")(0, EMM_TEST_PYTHON_MODULES);
  const PythonPlugin plugin = load_python_plugin("emm_test_adapter:Recording", std::nullopt);
  EXPECT_FALSE(plugin.capabilities.host_only_derived);
}

}  // namespace
}  // namespace emm::python
