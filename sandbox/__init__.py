"""The DataHub-shaped test world: real stores, a GMS-like writer and a MAE-like consumer."""
