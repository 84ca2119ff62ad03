# A convolution weight's gradient against float64, contiguous and channels-last, with and
# without cuDNN TF32 (docs/accelerator-validation.md): python3 docs/gpu/tf32_channels_last.py
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
x64 = torch.randn(64, 3, 32, 32, dtype=torch.float64)
y = torch.randint(0, 10, (64,))
conv64 = nn.Conv2d(3, 16, 3, padding=1).double()
fc64 = nn.Linear(4096, 10).double()

def grad(dev, dtype, channels_last, tf32):
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    conv = nn.Conv2d(3, 16, 3, padding=1).to(dev, dtype)
    fc = nn.Linear(4096, 10).to(dev, dtype)
    conv.load_state_dict(conv64.state_dict())
    fc.load_state_dict(fc64.state_dict())
    x = x64.to(dev, dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        conv = conv.to(memory_format=torch.channels_last)
    out = fc(F.max_pool2d(F.relu(conv(x)), 2).flatten(1))
    loss = F.cross_entropy(out, y.to(dev))
    loss.backward()
    return conv.weight.grad.double().cpu()

ref = grad("cpu", torch.float64, False, False)
rms = (ref ** 2).mean().sqrt().item()
print("rms(grad.conv.weight) =", rms)
for cl in (False, True):
    for tf in (False, True):
        g = grad("cuda", torch.float32, cl, tf)
        print(f"channels_last={cl} cudnn_tf32={tf}: rmse vs float64 = {((g - ref) ** 2).mean().sqrt().item():.3e}")
