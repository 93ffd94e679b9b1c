/* Stub libicudata.so.72 for the LLVM 19 OpenMP runtime bundle.
 *
 * The real library is nothing but one 31 MB read-only object, icudt72_dat (ICU's common data
 * package); libicuuc.so.72 imports that one symbol (an R_X86_64_GLOB_DAT relocation, resolved at
 * load time, so the symbol must exist). libicuuc is in the bundle only because libxml2 links it
 * (ICU converters, tried for encodings iconv lacks); libLLVM uses libxml2 only for Windows
 * manifest merging, never on libomptarget's path.
 *
 * This payload is a valid, empty ICU data package -- the same shape as ICU's own "stubdata"
 * library: a 32-byte data header, format "ToCP" 1.0, a table of contents with count 0. ICU
 * therefore accepts it and reports missing data (U_FILE_ACCESS_ERROR / U_MISSING_RESOURCE_ERROR)
 * if anything ever asks for an item, falling back to ICU_DATA files if there are any. */
#include <stdint.h>

struct icu_data_info {          /* ICU's UDataInfo, 20 bytes */
    uint16_t size;
    uint16_t reserved_word;
    uint8_t is_big_endian;
    uint8_t charset_family;     /* 0 = ASCII family */
    uint8_t sizeof_uchar;
    uint8_t reserved_byte;
    uint8_t data_format[4];
    uint8_t format_version[4];
    uint8_t data_version[4];
};

struct icu_stub_package {
    uint16_t header_size;       /* 32: magic + info + padding */
    uint8_t magic1, magic2;     /* 0xda 0x27 */
    struct icu_data_info info;
    char padding[8];
    uint32_t count;             /* table-of-contents entries: none */
    uint32_t reserved;
    uint64_t toc[2];            /* one empty entry, as ICU's stub has, never read */
};

_Static_assert(sizeof(struct icu_data_info) == 20, "UDataInfo layout");
_Static_assert(__builtin_offsetof(struct icu_stub_package, count) == 32, "header size");

__attribute__((visibility("default"), aligned(16)))
const struct icu_stub_package icudt72_dat = {
    .header_size = 32,
    .magic1 = 0xda,
    .magic2 = 0x27,
    .info = {
        .size = sizeof(struct icu_data_info),
        .reserved_word = 0,
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        .is_big_endian = 1,
#else
        .is_big_endian = 0,
#endif
        .charset_family = 0,
        .sizeof_uchar = 2,
        .reserved_byte = 0,
        .data_format = {'T', 'o', 'C', 'P'},
        .format_version = {1, 0, 0, 0},
        .data_version = {0, 0, 0, 0},
    },
    .padding = {'s', 't', 'u', 'b', 'd', 'a', 't', 'a'},
    .count = 0,
    .reserved = 0,
    .toc = {0, 0},
};
