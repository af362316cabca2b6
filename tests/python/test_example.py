"""The transformer-block training step of python/examples runs on hk and agrees with plain torch."""
import transformer_step


def test_transformer_step():
    loss_hk, loss_torch, worst = transformer_step.run()
    assert loss_hk > 0 and abs(loss_hk - loss_torch) <= 1e-2 * loss_torch
    assert worst < 5e-2
