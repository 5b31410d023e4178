# layers.awk — per-layer gradient sizes and backward shares of VGG-16 and
# ResNet-101 (ImageNet, 224x224, 1000 classes) from their architectures,
# in dtctl plan --layer-times format (docs/PLAN.md#horovod): one line per
# gradient event, last layer first, "SECONDS BYTES", with the seconds in
# units of the step (forward 1/3, backward 2/3 split in proportion to each
# layer's multiply-adds); --samples-per-sec scales them to batch / X.
#   awk -v model=vgg16 -f layers.awk      awk -v model=resnet101 -f layers.awk
function conv(k, cin, cout, hw, bias) {
    P[n] = k * k * cin * cout + (bias ? cout : 2 * cout) # BN: gamma, beta
    F[n] = k * k * cin * cout * hw * hw
    n++
}
function fc(cin, cout) { P[n] = cin * cout + cout; F[n] = cin * cout; n++ }
# one bottleneck block as one gradient event (its convolutions' gradients
# are ready within a few kernels of one another)
function block(cin, w, hw, stride, proj,   p, f, k) {
    k = n
    conv(1, cin, w, hw * stride, 0); conv(3, w, w, hw, 0); conv(1, w, 4 * w, hw, 0)
    if (proj) conv(1, cin, 4 * w, hw, 0)
    p = 0; f = 0
    for (; n > k; ) { n--; p += P[n]; f += F[n] }
    P[n] = p; F[n] = f; n++
}
BEGIN {
    n = 0
    if (model == "vgg16") {
        split("3 64 224,64 64 224,64 128 112,128 128 112,128 256 56,256 256 56,256 256 56,256 512 28,512 512 28,512 512 28,512 512 14,512 512 14,512 512 14", L, ",")
        for (i = 1; i <= 13; i++) { split(L[i], c, " "); conv(3, c[1], c[2], c[3], 1) }
        fc(25088, 4096); fc(4096, 4096); fc(4096, 1000)
    } else if (model == "resnet101") {
        conv(7, 3, 64, 112, 0)
        split("3 4 23 3", blocks, " "); split("64 128 256 512", width, " ")
        split("56 28 14 7", size, " ")
        cin = 64
        for (s = 1; s <= 4; s++)
            for (b = 1; b <= blocks[s]; b++) {
                block(cin, width[s], size[s], (b == 1 && s > 1) ? 2 : 1, b == 1)
                cin = 4 * width[s]
            }
        fc(2048, 1000)
    } else {
        print "layers.awk: model=vgg16 or model=resnet101" > "/dev/stderr"
        exit 2
    }
    tp = 0; tf = 0
    for (i = 0; i < n; i++) { tp += P[i]; tf += F[i] }
    printf "# %s: %d gradient events, %d parameters, %.3g multiply-adds\n", model, n, tp, tf
    printf "forward %.9g\noptimizer 0\n", 1 / 3
    for (i = n - 1; i >= 0; i--)
        printf "%.9g %d\n", 2 / 3 * F[i] / tf, 4 * P[i]
}
