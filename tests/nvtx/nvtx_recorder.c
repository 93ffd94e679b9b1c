/*
 * A minimal NVTX tool for the tests: an injection library (loaded by NVTX 3 from
 * NVTX_INJECTION64_PATH, as Nsight Systems' is) that appends every domain range push and pop
 * to the file named by OMPBATCH_NVTX_RECORD, one line each:
 *
 *   push <domain>\t<message>
 *   pop <domain>
 *
 * Only the calls ompbatch makes are handled: nvtxDomainCreateA, nvtxDomainRangePushEx with an
 * ASCII message, nvtxDomainRangePop.
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { MAX_DOMAINS = 16 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char domain_names[MAX_DOMAINS][64];
static int domain_count;
static FILE *record;

/* Domain handles are 1-based indices into domain_names, never dereferenced by NVTX. */
static const char *domain_name(nvtxDomainHandle_t domain)
{
    size_t i = (size_t)(uintptr_t)domain;
    return i >= 1 && i <= (size_t)domain_count ? domain_names[i - 1] : "(default)";
}

static void write_line(const char *what, nvtxDomainHandle_t domain, const char *message)
{
    pthread_mutex_lock(&lock);
    if (record != NULL) {
        if (message != NULL)
            fprintf(record, "%s %s\t%s\n", what, domain_name(domain), message);
        else
            fprintf(record, "%s %s\n", what, domain_name(domain));
        fflush(record);
    }
    pthread_mutex_unlock(&lock);
}

static nvtxDomainHandle_t create_domain(const char *name)
{
    pthread_mutex_lock(&lock);
    uintptr_t handle = 0;
    if (domain_count < MAX_DOMAINS) {
        snprintf(domain_names[domain_count], sizeof(domain_names[0]), "%s", name);
        handle = (uintptr_t)++domain_count;
    }
    pthread_mutex_unlock(&lock);
    return (nvtxDomainHandle_t)handle;
}

static int push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attributes)
{
    const char *message = attributes != NULL && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII
                              ? attributes->message.ascii
                              : "(not ascii)";
    write_line("push", domain, message);
    return 0;
}

static int pop(nvtxDomainHandle_t domain)
{
    write_line("pop", domain, NULL);
    return 0;
}

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const char *path = getenv("OMPBATCH_NVTX_RECORD");
    if (path == NULL || (record = fopen(path, "a")) == NULL)
        return 0;
    const NvtxExportTableCallbacks *callbacks =
        (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (callbacks == NULL ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) ||
        size <= NVTX_CBID_CORE2_DomainCreateA)
        return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)create_domain;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)push;
    *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)pop;
    fprintf(record, "tool loaded\n");
    fflush(record);
    return 1;
}
