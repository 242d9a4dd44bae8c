// The loadable plugin library (EMM_CUDA_MEMORY_MANAGER, emm-certify --plugin).
#include "consumer_plugin.hpp"

EMM_EXPORT_MEMORY_MANAGER(consumer::ConsumerPlugin, consumer::kConsumerDeclaration)
