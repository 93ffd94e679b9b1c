// The inference table (README "Attribute inference") and the routing table, row by row.
#include <gtest/gtest.h>

#include <cstring>

extern "C" {
#include "plugin/plan/attrs.h"
#include "plugin/plan/route.h"
}

namespace {

ob_mem_info mem(ob_mem_kind kind, int ordinal = -1)
{
    ob_mem_info m;
    std::memset(&m, 0, sizeof(m));
    m.kind = kind;
    m.ordinal = ordinal;
    return m;
}

ob_copy classified(ob_mem_kind src, ob_side src_side, ob_mem_kind dst, ob_side dst_side,
                   uint64_t map_type = 0)
{
    ob_copy c;
    std::memset(&c, 0, sizeof(c));
    c.bytes = 64;
    c.map_type = map_type;
    c.src_mem = mem(src, src == OB_MEM_DEVICE ? 1 : -1);
    c.dst_mem = mem(dst, dst == OB_MEM_DEVICE ? 1 : -1);
    c.src_side = src_side;
    c.dst_side = dst_side;
    return c;
}

ob_attr_context context(int synchronous = 0, int overlap = 0)
{
    return ob_attr_context{1, synchronous, overlap};
}

CUmemcpyAttributes infer(ob_copy c, ob_attr_context ctx = context())
{
    ob_attrs_infer(&ctx, &c);
    return c.attr;
}

TEST(AttrInference, DeviceSourceIsReadInStreamOrder)
{
    auto a = infer(classified(OB_MEM_DEVICE, OB_SIDE_DEVICE, OB_MEM_PAGEABLE, OB_SIDE_HOST),
                   context(1));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, a.srcAccessOrder);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_INVALID, a.srcLocHint.type);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_INVALID, a.dstLocHint.type);
    EXPECT_EQ(0u, a.flags);
}

TEST(AttrInference, DeviceSourceStaysStreamOrderedEvenWithLiteralMapType)
{
    auto a = infer(classified(OB_MEM_DEVICE, OB_SIDE_DEVICE, OB_MEM_DEVICE, OB_SIDE_DEVICE,
                              OMPBATCH_MAP_LITERAL));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, a.srcAccessOrder);
}

TEST(AttrInference, LiteralAndPrivateHostSourcesAreReadDuringTheCall)
{
    for (uint64_t bits : {OMPBATCH_MAP_LITERAL, OMPBATCH_MAP_PRIVATE,
                          OMPBATCH_MAP_PRIVATE | OMPBATCH_MAP_TO}) {
        for (ob_mem_kind kind : {OB_MEM_PAGEABLE, OB_MEM_PINNED}) {
            auto a = infer(classified(kind, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE, bits));
            EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, a.srcAccessOrder)
                << "map type " << bits << " kind " << kind;
        }
    }
}

TEST(AttrInference, PinnedHostSourceIsReadInStreamOrderEvenWhenSynchronous)
{
    auto a = infer(classified(OB_MEM_PINNED, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE),
                   context(1));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, a.srcAccessOrder);
}

TEST(AttrInference, PageableSourceOfSynchronousBatchMayBeReadAnyTime)
{
    auto a = infer(classified(OB_MEM_PAGEABLE, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE),
                   context(1));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_ANY, a.srcAccessOrder);
}

TEST(AttrInference, PageableSourceOfAsynchronousBatchIsReadInStreamOrder)
{
    auto a = infer(classified(OB_MEM_PAGEABLE, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE),
                   context(0));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, a.srcAccessOrder);
}

TEST(AttrInference, ManagedDestinationOnTheDeviceSideHintsTheDevice)
{
    auto a = infer(classified(OB_MEM_PINNED, OB_SIDE_HOST, OB_MEM_MANAGED, OB_SIDE_DEVICE));
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, a.dstLocHint.type);
    EXPECT_EQ(1, a.dstLocHint.id);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_INVALID, a.srcLocHint.type);
}

TEST(AttrInference, ManagedSourceOnTheDeviceSideHintsTheDeviceAndIsStreamOrdered)
{
    auto a = infer(classified(OB_MEM_MANAGED, OB_SIDE_DEVICE, OB_MEM_PAGEABLE, OB_SIDE_HOST),
                   context(1));
    EXPECT_EQ(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, a.srcAccessOrder);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, a.srcLocHint.type);
    EXPECT_EQ(1, a.srcLocHint.id);
}

TEST(AttrInference, ManagedMemoryOnTheHostSideHintsTheHost)
{
    auto to_host = infer(classified(OB_MEM_DEVICE, OB_SIDE_DEVICE, OB_MEM_MANAGED, OB_SIDE_HOST));
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_HOST, to_host.dstLocHint.type);
    auto from_host =
        infer(classified(OB_MEM_MANAGED, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE));
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_HOST, from_host.srcLocHint.type);
}

TEST(AttrInference, PreferOverlapSetsTheOverlapFlag)
{
    auto a = infer(classified(OB_MEM_PINNED, OB_SIDE_HOST, OB_MEM_DEVICE, OB_SIDE_DEVICE),
                   context(0, 1));
    EXPECT_EQ(static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE), a.flags);
}

TEST(AttrCompare, IsATotalOrderThatSeparatesEveryField)
{
    CUmemcpyAttributes base;
    std::memset(&base, 0, sizeof(base));
    base.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CUmemcpyAttributes other = base;
    EXPECT_EQ(0, ob_attrs_compare(&base, &other));
    other.dstLocHint.id = 3;
    EXPECT_LT(ob_attrs_compare(&base, &other), 0);
    EXPECT_GT(ob_attrs_compare(&other, &base), 0);
    other = base;
    other.flags = 1;
    EXPECT_NE(0, ob_attrs_compare(&base, &other));
}

TEST(AttrEqual, AgreesWithTheOrderOnEveryField)
{
    CUmemcpyAttributes base;
    std::memset(&base, 0, sizeof(base));
    base.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    EXPECT_TRUE(ob_attrs_equal(&base, &base));
    for (int field = 0; field < 6; field++) {
        CUmemcpyAttributes other = base;
        switch (field) {
        case 0: other.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY; break;
        case 1: other.srcLocHint.type = CU_MEM_LOCATION_TYPE_HOST; break;
        case 2: other.srcLocHint.id = 1; break;
        case 3: other.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE; break;
        case 4: other.dstLocHint.id = 2; break;
        default: other.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE; break;
        }
        EXPECT_FALSE(ob_attrs_equal(&base, &other)) << "field " << field;
        EXPECT_NE(0, ob_attrs_compare(&base, &other)) << "field " << field;
    }
}

ob_category category_of(ob_mem_kind src, ob_mem_kind dst)
{
    ob_copy c = classified(src, OB_SIDE_HOST, dst, OB_SIDE_HOST);
    return ob_route_category(&c);
}

TEST(RouteCategory, EveryPairOfKinds)
{
    EXPECT_EQ(OB_CAT_H2D_PINNED, category_of(OB_MEM_PINNED, OB_MEM_DEVICE));
    EXPECT_EQ(OB_CAT_H2D_PAGEABLE, category_of(OB_MEM_PAGEABLE, OB_MEM_DEVICE));
    EXPECT_EQ(OB_CAT_D2H_PINNED, category_of(OB_MEM_DEVICE, OB_MEM_PINNED));
    EXPECT_EQ(OB_CAT_D2H_PAGEABLE, category_of(OB_MEM_DEVICE, OB_MEM_PAGEABLE));
    EXPECT_EQ(OB_CAT_D2D, category_of(OB_MEM_DEVICE, OB_MEM_DEVICE));
    EXPECT_EQ(OB_CAT_MANAGED, category_of(OB_MEM_MANAGED, OB_MEM_PAGEABLE));
    EXPECT_EQ(OB_CAT_MANAGED, category_of(OB_MEM_DEVICE, OB_MEM_MANAGED));
    EXPECT_EQ(OB_CAT_H2H, category_of(OB_MEM_PAGEABLE, OB_MEM_PINNED));
    EXPECT_EQ(OB_CAT_H2H, category_of(OB_MEM_PINNED, OB_MEM_PINNED));
}

const ompbatch_batch_form kBatch = OMPBATCH_FORM_V13000;

TEST(RouteChoice, HostPairsAlwaysUseMemcpy)
{
    EXPECT_EQ(OB_ROUTE_HOST, ob_route_choose(OB_CAT_H2H, 100, 6400, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_HOST, ob_route_choose(OB_CAT_H2H, 100, 6400, kBatch, 1));
}

TEST(RouteChoice, ASingleCopyGoesPerCopy)
{
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PINNED, 1, 8, kBatch, 0));
}

TEST(RouteChoice, DisabledOrOldDriverGoesPerCopy)
{
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PINNED, 64, 512, kBatch, 1));
    EXPECT_EQ(OB_ROUTE_PER_COPY,
              ob_route_choose(OB_CAT_H2D_PINNED, 64, 512, OMPBATCH_FORM_PER_COPY, 0));
    EXPECT_EQ(OB_ROUTE_BATCH,
              ob_route_choose(OB_CAT_H2D_PINNED, 64, 512, OMPBATCH_FORM_V12080, 0));
}

TEST(RouteChoice, DeviceToPageableNeverBatches)
{
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_D2H_PAGEABLE, 1024, 1024 * 8, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY,
              ob_route_choose(OB_CAT_D2H_PAGEABLE, 1024, 1024 * 4096, kBatch, 0));
}

TEST(RouteChoice, PageableToDeviceBatchesOnlySmallPieces)
{
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PAGEABLE, 1024, 1024 * 4096, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PAGEABLE, 2, 2 * 4096, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PAGEABLE, 8, 8 * 8192, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PAGEABLE, 4, 4 * 8192, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PAGEABLE, 128, 128 * 16384, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PAGEABLE, 16, 16 * 65536, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY,
              ob_route_choose(OB_CAT_H2D_PAGEABLE, 128, 128 * 1048576, kBatch, 0));
}

TEST(RouteChoice, PinnedToDeviceAvoidsTheMidSizeValley)
{
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 2, 2 * 8, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 2, 2 * 1024, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PINNED, 4, 4 * 4096, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 8, 8 * 4096, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 1024, 1024 * 4096, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PINNED, 128, 128 * 8192, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_PER_COPY, ob_route_choose(OB_CAT_H2D_PINNED, 128, 128 * 16384, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 2, 2 * 32768, kBatch, 0));
    EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(OB_CAT_H2D_PINNED, 16, 16 * 1048576, kBatch, 0));
}

TEST(RouteChoice, DeviceToPinnedDeviceAndManagedGroupsBatch)
{
    for (ob_category c : {OB_CAT_D2H_PINNED, OB_CAT_D2D, OB_CAT_MANAGED})
        for (size_t size : {8, 4096, 16384, 1048576})
            EXPECT_EQ(OB_ROUTE_BATCH, ob_route_choose(c, 2, 2 * size, kBatch, 0)) << c << " " << size;
}

}  // namespace
