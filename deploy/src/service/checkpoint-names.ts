/** The read models' checkpoint name (the projection runner's): what the caches and the change feed follow. */
export const READ_MODELS = 'read-models';
