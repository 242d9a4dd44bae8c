// components.hpp — micro-benchmarks of the pieces one allocation + release is made of, so that a
// performance target that is missed can be traced to where the time goes:
//
//   Component/ctx_get_current/<backend>            what Context::make_current() asks the driver
//   Component/context_memalloc_dispatch/<backend>  Context::memalloc + release through a plugin
//                                                  that hands out one preallocated pointer: the
//                                                  host's own cost per call
//   Component/driver_batched_pairs/<backend>/batch:<n>
//                                                  256-byte cuMemAlloc pairs freed n at a time
//                                                  (n = 11, 64; counters per_pair_ns, alloc_ns,
//                                                  free_ns): the reference manager's deferral
//                                                  with no host overhead
//   Component/memory_pointer_with_finalizer/host   make_shared<MemoryPointer> with a finalizer +
//                                                  release: the floor of any plugin's pair
//   Component/auto_free_pointer_own/host           make_shared<AutoFreePointer>()->own() +
//                                                  release: the reference manager's object model
//   Component/pending_deallocs_add_item/host       one deferred free (queue + a flush every 11th)
//   Component/mutex_lock_unlock/host               an uncontended std::mutex
//   Component/slab_allocator_pair_1000_live/host   the pool's bookkeeping alone (SlabAllocator
//                                                  allocate(256) + free, 1000 blocks live)
#pragma once

namespace emm::bench {

// Registers the Component/... benchmarks (in the emm_bench_alloc_pair executable).
void register_components();

}  // namespace emm::bench
