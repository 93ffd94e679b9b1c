#include "plugin/core/struct_out.h"

#include <string.h>

#include "plugin/core/error.h"

int ob_struct_out(void *out, const void *current, size_t current_size, const char *name,
                  const char *type)
{
    if (out == NULL)
        return ob_fail(OMPBATCH_ERR_NULL_POINTER, "%s is NULL", name);
    size_t size;
    memcpy(&size, out, sizeof(size));
    if (size < sizeof(size))
        return ob_fail(OMPBATCH_ERR_INVALID_ARGUMENT,
                       "%s->struct_size is %zu; set it to sizeof(%s)", name, size, type);
    size_t known = size < current_size ? size : current_size;
    memcpy(out, current, known);
    memset((unsigned char *)out + known, 0, size - known);
    memcpy(out, &size, sizeof(size));
    return OMPBATCH_OK;
}
