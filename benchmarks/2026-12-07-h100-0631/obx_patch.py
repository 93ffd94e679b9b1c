p='plugin/hook/omp_hook.c'
s=open(p).read()
def rep(a,b):
    global s
    assert a in s, a
    s=s.replace(a,b,1)
rep('''static int resolve_device(const ob_hook_runtime *rt, int64_t device_id)
{''','''static int obx_bits(void)
{
    static int v = -1;
    if (v < 0) { const char *e = getenv("OBX_SKIP"); v = e ? atoi(e) : 0; }
    return v;
}
static int resolve_device(const ob_hook_runtime *rt, int64_t device_id)
{
    if (obx_bits() & 32) return 0;''')
rep('''    if (ob_host_saturated())
        return -1;
    region_args kernel_args;''','''    if ((obx_bits() & 16) || ob_host_saturated())
        return -1;
    region_args kernel_args;''')
rep('''    int result = 0;
    pthread_rwlock_rdlock(&construct_lock);
    /* Direct first''','''    int result = 0;
    int obx = obx_bits();
    if (!(obx & 8)) pthread_rwlock_rdlock(&construct_lock);
    /* Direct first''')
rep('''                      &result) == 0) {
        pthread_rwlock_unlock(&construct_lock);''','''                      &result) == 0) {
        if (!(obx & 8)) pthread_rwlock_unlock(&construct_lock);''')
rep('''    if (ob_hook_region_splittable(device, args)) {
        pthread_rwlock_unlock(&construct_lock);''','''    if (!(obx & 1) && ob_hook_region_splittable(device, args)) {
        pthread_rwlock_unlock(&construct_lock);''')
rep('''    int mappers = ob_hook_kernel_maps(device, args);
    if (mappers)
        ob_mapper_record_start(-1);''','''    int mappers = (obx & 2) ? 0 : ob_hook_kernel_maps(device, args);
    if (mappers)
        ob_mapper_record_start(-1);''')
rep('''    if (result == 0 && !mappers)
        ob_hook_region_learn(device, args);
    pthread_rwlock_unlock(&construct_lock);''','''    if (result == 0 && !mappers && !(obx & 4))
        ob_hook_region_learn(device, args);
    if (!(obx & 8)) pthread_rwlock_unlock(&construct_lock);''')
open(p,'w').write(s)
