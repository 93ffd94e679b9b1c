#include "plugin/cuda/nvtx.h"

#include <pthread.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

#include "plugin/core/config.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int tool_attached;
static nvtxDomainHandle_t domain;

/* NVTX 3 finds its tool through this variable only (dynamic injection; no static tool is
 * linked into the library), so without it every NVTX call would be a no-op: skip them and the
 * name formatting altogether. */
static void look_for_tool(void)
{
    const char *path = getenv("NVTX_INJECTION64_PATH");
    tool_attached = path != NULL && path[0] != '\0';
    if (tool_attached)
        domain = nvtxDomainCreateA("ompbatch");
}

int ob_nvtx_active(void)
{
    if (!ob_config_get()->nvtx)
        return 0;
    pthread_once(&once, look_for_tool);
    return tool_attached;
}

void ob_nvtx_push(const char *name)
{
    nvtxEventAttributes_t attributes = {0};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(domain, &attributes);
}

void ob_nvtx_pop(void)
{
    nvtxDomainRangePop(domain);
}
